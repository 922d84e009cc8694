package io.outrun.store;

import java.time.Duration;
import javax.sql.DataSource;

/**
 * How long ended executions are kept: an operator's clean-up, run from the command line, never by
 * a node. Apart from the other stores because it is the only one that deletes rows, and it
 * works in batches so that a large backlog never holds long locks on a busy table.
 */
public final class RetentionStore {

    /** Drops the output (and what was written to stdin) of a batch of executions that ended before the age; their state and byte counts stay. */
    private static final NamedSql CLEAR_OUTPUT = NamedSql.of("""
            WITH batch AS (SELECT e.id FROM executions e WHERE e.finished_at < now() - :age_ms * interval '1 millisecond'
                AND (EXISTS (SELECT 1 FROM execution_output o WHERE o.execution_id = e.id)
                  OR EXISTS (SELECT 1 FROM execution_stdin s WHERE s.execution_id = e.id)) LIMIT :batch),
              gone AS (DELETE FROM execution_output o USING batch WHERE o.execution_id = batch.id),
              gone_stdin AS (DELETE FROM execution_stdin s USING batch WHERE s.execution_id = batch.id)
            UPDATE executions SET stdout_truncated = stdout_total_bytes > 0, stderr_truncated = stderr_total_bytes > 0
            WHERE id IN (SELECT id FROM batch)""");

    /** Deletes a batch of executions that ended before the age, with their output. */
    private static final NamedSql DELETE_ROWS = NamedSql.of("""
            WITH batch AS (SELECT id FROM executions e WHERE finished_at < now() - :age_ms * interval '1 millisecond'
                -- A webhook still being delivered (V20) keeps its execution: its event is made from the row.
                AND NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.execution_id = e.id AND w.state = 'pending')
                LIMIT :batch),
              gone AS (DELETE FROM execution_output o USING batch WHERE o.execution_id = batch.id)
            DELETE FROM executions WHERE id IN (SELECT id FROM batch)""");

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
            n = ExecutionRows.update(dataSource, CLEAR_OUTPUT, NamedSql.Args.of("age_ms", age.toMillis(), "batch", batch));
            cleared += n;
        } while (n == batch);
        if (deleteAge != null) {
            do {
                n = ExecutionRows.update(dataSource, DELETE_ROWS,
                        NamedSql.Args.of("age_ms", deleteAge.toMillis(), "batch", batch));
                deleted += n;
            } while (n == batch);
        }
        return new long[] {cleared, deleted};
    }
}
