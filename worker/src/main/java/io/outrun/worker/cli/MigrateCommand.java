package io.outrun.worker.cli;

import io.outrun.core.store.Database;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** Applies Outrun's migrations and exits. Every role also migrates at start. */
@Command(name = "migrate", mixinStandardHelpOptions = true, description = "Apply database migrations and exit.")
final class MigrateCommand implements Callable<Integer> {

    @Mixin
    DbOptions db;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        try (var pool = Database.pool(db.toConfig(), "migrate")) {
            int applied = Database.migrate(Database.direct(db.toConfig()));
            spec.commandLine().getOut().println("outrun: schema up to date (" + applied + " migrations applied now)");
        }
        return 0;
    }
}
