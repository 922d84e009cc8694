package io.outrun.core.redrive;

import io.outrun.core.execution.Execution;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import java.util.List;
import org.jobrunr.jobs.Job;
import org.jobrunr.jobs.states.StateName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CI (ChaosIT): a node SIGKILLed within a second of ending an execution never wrote the end on
 * its JobRunr job, which stayed PROCESSING on a dead server until JobRunr failed it as an orphan,
 * a minute later and FAILED for a success. The sweep ends such jobs as their executions ended.
 * No worker runs here: the rows are left exactly as such a node leaves them.
 */
class BooksLeftOpenIT {

    @Test
    void theSweepEndsTheJobsOfExecutionsWhoseNodeStoppedBeforeWritingThem() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        try (Core api = Core.open(db, "api")) {
            Execution succeeded = ended(api, rows, "succeeded", 0, null, 15);
            Execution failed = ended(api, rows, "failed", 3, "exit_nonzero", 15);
            Execution cancelled = ended(api, rows, "cancelled", null, "cancelled", 15);
            // Its node has a second to write it yet: left alone.
            Execution justNow = ended(api, rows, "succeeded", 0, null, 1);
            rows.update("UPDATE fleet_tasks SET watermark = now() WHERE name = 'sweep'");

            assertThat(api.sweep().sweep().booksClosed()).isEqualTo(3);

            Job ok = api.storage().getJobById(succeeded.jobId());
            assertThat(ok.getState()).isEqualTo(StateName.SUCCEEDED);
            assertThat(api.jsonMapper().serialize(ok)).contains("execution " + succeeded.id() + " of alice")
                    .contains("Its node stopped before it wrote this job's end");
            Job bad = api.storage().getJobById(failed.jobId());
            assertThat(bad.getState()).isEqualTo(StateName.FAILED);
            assertThat(api.jsonMapper().serialize(bad)).contains("failed · attempt 1 of 3 · exit code 3");
            assertThat(api.storage().getJobById(cancelled.jobId()).getState()).isEqualTo(StateName.DELETED);
            assertThat(api.storage().getJobById(justNow.jobId()).getState()).isEqualTo(StateName.ENQUEUED);

            // Once written, never again; the one in its grace is written once the grace is over.
            assertThat(api.sweep().sweep().booksClosed()).isZero();
            rows.update("UPDATE executions SET finished_at = now() - interval '11 seconds' WHERE id = ?", justNow.id());
            assertThat(api.sweep().sweep().booksClosed()).isEqualTo(1);
            assertThat(api.storage().getJobById(justNow.jobId()).getState()).isEqualTo(StateName.SUCCEEDED);
            assertThat(List.of(succeeded, failed, cancelled, justNow)).allSatisfy(e ->
                    assertThat(rows.single("SELECT count(*) FROM jobrunr_jobs WHERE id = ? AND state IN ('ENQUEUED', 'PROCESSING')",
                            e.jobId().toString())).isZero());
        }
    }

    /** A row as its node ended it {@code secondsAgo}, and its job as the node left it: ENQUEUED. */
    private static Execution ended(Core api, Rows rows, String status, Integer exitCode, String errorCode, int secondsAgo)
            throws java.sql.SQLException {
        java.util.UUID id = rows.execution().owner("alice").command("true").status(status).attempt(1)
                .ended(exitCode, errorCode).insert();
        rows.update("UPDATE executions SET finished_at = now() - ? * interval '1 second' WHERE id = ?", secondsAgo, id);
        Execution e = api.submissions().find(id).orElseThrow();
        api.books().enqueue(id, e.bookSeq(), "alice", "true");
        return e;
    }
}
