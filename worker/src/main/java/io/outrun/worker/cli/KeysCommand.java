package io.outrun.worker.cli;

import io.outrun.cli.Format;
import io.outrun.core.config.ConfigException;
import io.outrun.core.identity.SigningKeys;
import io.outrun.core.secrets.SecretsKey;
import io.outrun.core.store.Database;
import java.io.PrintWriter;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * The fleet's keys for run tokens (issue 31), straight in the database (an operator's tool):
 * rotate makes a new current key and keeps the old one published for {@link SigningKeys#OVERLAP},
 * so every token it signed still verifies until it expires; ls lists them.
 */
@Command(name = "keys", mixinStandardHelpOptions = true, description = "Rotate or list the keys that sign run tokens.",
        subcommands = {KeysCommand.Rotate.class, KeysCommand.Ls.class})
final class KeysCommand implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    @Command(name = "rotate", mixinStandardHelpOptions = true, description = "Make a new signing key; the current one"
            + " keeps verifying the tokens it signed until they expire (it stays published for 24 h 5 min).")
    static final class Rotate implements Callable<Integer> {
        @Mixin
        DbOptions db;

        @Mixin
        SecretsKeyOptions secretsKey;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            SecretsKey key = secretsKey.key();
            if (key == null) {
                throw new ConfigException("rotating needs the fleet's secrets key, which seals the signing keys: set "
                        + SecretsKeyOptions.ENV + " or pass --secrets-key-file, as for the API nodes and workers");
            }
            try (var pool = Database.pool(db.toConfig(), "keys")) {
                Database.migrate(pool);
                SigningKeys keys = new SigningKeys(pool, key);
                // A key sealed under another secrets key: a new one sealed under this one would sign
                // nothing on the fleet's nodes. Only checked when there is a current key (current()
                // would make one otherwise).
                boolean hasCurrent = keys.all().stream().anyMatch(k -> k.retiredAt() == null);
                if (hasCurrent && keys.current().isEmpty()) {
                    throw new ConfigException("the current signing key is sealed under another secrets key than this"
                            + " one: rotate with the key the fleet's nodes use (" + SecretsKeyOptions.ENV
                            + " or --secrets-key-file)");
                }
                SigningKeys.Rotated rotated = keys.rotate();
                PrintWriter out = spec.commandLine().getOut();
                out.println("outrun: new signing key " + rotated.kid() + " (nodes sign with it within a minute)");
                if (rotated.retiredKid() == null) {
                    out.println("outrun: there was no key before it");
                } else {
                    Instant until = keys.all().stream().filter(k -> k.kid().equals(rotated.retiredKid()))
                            .map(SigningKeys.Published::publishedUntil).findFirst().orElse(null);
                    out.println("outrun: retired " + rotated.retiredKid() + "; it stays published (its tokens verify)"
                            + " until " + (until == null ? "its overlap ends (" + Format.duration(SigningKeys.OVERLAP.toMillis()) + ")"
                                    : until.truncatedTo(ChronoUnit.SECONDS)));
                }
                out.flush();
            }
            return 0;
        }
    }

    @Command(name = "ls", mixinStandardHelpOptions = true, description = "List the signing keys, newest first:"
            + " the current one, and retired ones with how long they stay published.")
    static final class Ls implements Callable<Integer> {
        @Mixin
        DbOptions db;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            try (var pool = Database.pool(db.toConfig(), "keys")) {
                Database.migrate(pool);
                List<SigningKeys.Published> keys = new SigningKeys(pool, null).all();
                PrintWriter out = spec.commandLine().getOut();
                if (keys.isEmpty()) {
                    spec.commandLine().getErr().println("outrun: no signing keys yet: the first node that signs a run's"
                            + " token makes one (or `outrun keys rotate`)");
                    return 0;
                }
                Instant now = Instant.now();
                String format = "%-43s  %-20s  %-20s  %-20s  %s%n";
                out.printf(format, "KID", "CREATED", "RETIRED", "PUBLISHED UNTIL", "");
                for (SigningKeys.Published k : keys) {
                    String state = k.retiredAt() == null ? "current"
                            : k.publishedUntil() != null && k.publishedUntil().isAfter(now) ? "published" : "expired";
                    out.printf(format, k.kid(), time(k.createdAt()), time(k.retiredAt()),
                            k.retiredAt() == null ? "-" : time(k.publishedUntil()), state);
                }
                out.flush();
            }
            return 0;
        }

        private static String time(Instant t) {
            return t == null ? "-" : t.truncatedTo(ChronoUnit.SECONDS).toString();
        }
    }
}
