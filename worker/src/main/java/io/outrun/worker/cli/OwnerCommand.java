package io.outrun.worker.cli;

import io.outrun.api.auth.TokenStore;
import io.outrun.core.owner.OwnerStore;
import io.outrun.core.config.ConfigException;
import io.outrun.core.store.Database;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** Sets and lists owners' own caps, straight in the database (an operator's tool). */
@Command(name = "owner", mixinStandardHelpOptions = true, description = "Set or list owners' caps on running and queued executions.",
        subcommands = {OwnerCommand.Set.class, OwnerCommand.List.class})
final class OwnerCommand implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    @Command(name = "set", mixinStandardHelpOptions = true,
            description = "Set an owner's caps (fleet-wide, effective at once); a cap left out or `default` follows the"
                    + " nodes' --owner-max-running / --owner-max-queued.")
    static final class Set implements Callable<Integer> {
        @Mixin
        DbOptions db;

        @Parameters(paramLabel = "OWNER", description = "The owner, as its tokens name it")
        String owner;

        @Option(names = "--max-running", paramLabel = "N|default", description = "Running executions at once, fleet-wide")
        String maxRunning;

        @Option(names = "--max-queued", paramLabel = "N|default", description = "Queued executions; more answer 429")
        String maxQueued;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            TokenStore.validOwner(owner);
            Integer running = cap("--max-running", maxRunning);
            Integer queued = cap("--max-queued", maxQueued);
            try (var pool = Database.pool(db.toConfig(), "owner")) {
                Database.migrate(pool);
                OwnerStore.Caps caps = new OwnerStore(pool).set(owner, running, queued);
                spec.commandLine().getOut().println("outrun: owner " + owner + ": " + describe(caps));
            }
            return 0;
        }

        private static Integer cap(String flag, String value) {
            if (value == null || value.equals("default")) {
                return null;
            }
            try {
                int n = Integer.parseInt(value);
                if (n >= 1) {
                    return n;
                }
            } catch (NumberFormatException e) {
                // answered below
            }
            throw new ConfigException(flag + " must be a whole number of at least 1, or `default`, got: " + value);
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List owners with caps of their own.")
    static final class List implements Callable<Integer> {
        @Mixin
        DbOptions db;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            try (var pool = Database.pool(db.toConfig(2), "owner")) {
                var out = spec.commandLine().getOut();
                for (OwnerStore.Caps caps : new OwnerStore(pool).list()) {
                    out.println(caps.owner() + ": " + describe(caps));
                }
                out.flush();
            }
            return 0;
        }
    }

    static String describe(OwnerStore.Caps caps) {
        return "max running " + (caps.maxRunning() == null ? "default" : caps.maxRunning())
                + ", max queued " + (caps.maxQueued() == null ? "default" : caps.maxQueued());
    }
}
