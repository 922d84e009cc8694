package io.outrun.worker.cli;

import io.outrun.api.auth.TokenStore;
import io.outrun.core.config.ConfigException;
import io.outrun.core.store.Database;
import java.util.UUID;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** Creates and revokes API tokens, straight in the database (an operator's tool). */
@Command(name = "token", mixinStandardHelpOptions = true, description = "Create or revoke API tokens.",
        subcommands = {TokenCommand.Create.class, TokenCommand.Revoke.class})
final class TokenCommand implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    @Command(name = "create", mixinStandardHelpOptions = true,
            description = "Create a token for an owner; the token is the last line of the output.")
    static final class Create implements Callable<Integer> {
        @Mixin
        DbOptions db;

        @Option(names = "--owner", required = true, description = "Owner the token acts as")
        String owner;

        @Option(names = "--admin", description = "Also let it read fleet-wide views (GET /v1/admin/nodes)")
        boolean admin;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            TokenStore.validOwner(owner);
            try (var pool = Database.pool(db.toConfig(), "token")) {
                Database.migrate(pool);
                TokenStore.Issued issued = new TokenStore(pool).create(owner, admin);
                var out = spec.commandLine().getOut();
                out.println("outrun: " + (admin ? "admin " : "") + "token " + issued.id() + " for owner " + owner
                        + " (shown only now; revoke with `outrun token revoke --id " + issued.id() + "`):");
                out.println(issued.token());
                out.flush();
            }
            return 0;
        }
    }

    @Command(name = "revoke", mixinStandardHelpOptions = true,
            description = "Revoke a token (by its value or id); the API refuses it within seconds.")
    static final class Revoke implements Callable<Integer> {
        @Mixin
        DbOptions db;

        @ArgGroup(multiplicity = "1")
        Which which;

        static final class Which {
            @Parameters(paramLabel = "TOKEN", description = "The token itself")
            String token;

            @Option(names = "--id", description = "The token's id, as printed at creation")
            String id;
        }

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            UUID id = null;
            if (which.id != null) {
                try {
                    id = UUID.fromString(which.id);
                } catch (IllegalArgumentException e) {
                    throw new ConfigException("--id must be a token id (a UUID), got: " + which.id);
                }
            }
            try (var pool = Database.pool(db.toConfig(), "token")) {
                TokenStore tokens = new TokenStore(pool);
                boolean revoked = id != null ? tokens.revokeById(id) : tokens.revoke(which.token);
                if (!revoked) {
                    spec.commandLine().getErr().println("outrun: no live token matches (unknown or already revoked)");
                    return 1;
                }
                spec.commandLine().getOut().println("outrun: token revoked");
            }
            return 0;
        }
    }
}
