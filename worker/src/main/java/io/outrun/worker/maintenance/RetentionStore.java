package io.outrun.worker.maintenance;

import io.outrun.core.store.ExecutionRows;
import io.outrun.core.store.ExecutionsTable;
import io.outrun.core.store.NamedSql;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * How long ended executions are kept: an operator's clean-up, run from the command line, never by
 * a node. Apart from the other stores because it is the only one that deletes rows, and it
 * works in batches so that a large backlog never holds long locks on a busy table.
 */
public final class RetentionStore {

    private final DataSource dataSource;

    public RetentionStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /**
     * Drops the stored output of executions that ended more than {@code age} ago (their state,
     * exit code and byte counts stay), and deletes the rows themselves once they ended more than
     * {@code deleteAge} ago (null: never).
     *
     * @return {outputs cleared, rows deleted}
     */
    public long[] prune(Duration age, Duration deleteAge, int batch) {
        long cleared = 0;
        long deleted = 0;
        int n;
        do {
            n = ExecutionRows.update(dataSource, ExecutionsTable.CLEAR_OUTPUT, NamedSql.Args.of("age_ms", age.toMillis(), "batch", batch));
            cleared += n;
        } while (n == batch);
        if (deleteAge != null) {
            do {
                n = ExecutionRows.update(dataSource, ExecutionsTable.DELETE_ROWS,
                        NamedSql.Args.of("age_ms", deleteAge.toMillis(), "batch", batch));
                deleted += n;
            } while (n == batch);
        }
        return new long[] {cleared, deleted};
    }
}
