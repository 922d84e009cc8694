package io.outrun.worker.cli;

import io.outrun.core.config.ConfigException;
import io.outrun.core.store.Database;
import io.outrun.worker.maintenance.RetentionStore;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Retention: frees the bulky output of old finished executions (run it from cron). */
@Command(name = "prune", mixinStandardHelpOptions = true,
        description = "Drop the stored output of executions that ended long ago, and optionally the rows.")
final class PruneCommand implements Callable<Integer> {

    @Mixin
    DbOptions db;

    @Option(names = "--output-older-than-days", defaultValue = "30",
            description = "Clear stdout/stderr of executions that ended more than this many days ago (default ${DEFAULT-VALUE})")
    int outputDays;

    @Option(names = "--delete-older-than-days",
            description = "Also delete executions that ended more than this many days ago (default: keep rows)")
    Integer deleteDays;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        if (outputDays < 0 || (deleteDays != null && deleteDays < 0)) {
            throw new ConfigException("--output-older-than-days and --delete-older-than-days must be 0 or more");
        }
        try (var pool = Database.pool(db.toConfig(), "prune")) {
            Database.migrate(pool);
            long[] done = new RetentionStore(pool).prune(Duration.ofDays(outputDays),
                    deleteDays == null ? null : Duration.ofDays(deleteDays), 1000);
            spec.commandLine().getOut().printf("outrun: cleared the output of %d executions, deleted %d%n", done[0], done[1]);
        }
        return 0;
    }
}
