package io.outrun.core.books;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.core.store.SubmissionStore.CancelResult;
import io.outrun.testing.Await;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The books of new executions are written off the submit's path, many in one JobRunr save: a
 * burst's books share a few transactions, each shows on the dashboard within a moment, one
 * cancelled before its book was written still ends DELETED, and a stopping node writes what
 * it still held. No worker runs here.
 */
class NewBooksIT {

    @Test
    void aBurstsBooksAreWrittenTogetherSoonAfterItsSubmits() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        try (Core api = Core.open(db, "api")) {
            ExecutorService callers = Executors.newFixedThreadPool(8);
            List<Future<Execution>> submits = new ArrayList<>();
            for (int i = 0; i < 80; i++) {
                submits.add(callers.submit(() -> api.service().submit(Submission.of("alice", "true")).execution()));
            }
            List<UUID> jobs = new ArrayList<>();
            for (Future<Execution> f : submits) {
                jobs.add(f.get().jobId());
            }
            callers.shutdown();
            Await.until("every book written", Duration.ofSeconds(5),
                    () -> rows.single("SELECT count(*) FROM jobrunr_jobs WHERE state = 'ENQUEUED'") == 80L);
            long transactions = rows.single("SELECT count(DISTINCT xmin::text) FROM jobrunr_jobs");
            assertThat(transactions).as("80 books in a few saves, not one transaction each").isLessThan(20L);
            assertThat(jobs).allSatisfy(job -> assertThat(
                    rows.single("SELECT count(*) FROM jobrunr_jobs WHERE id = ?", job.toString())).isEqualTo(1L));
        }
    }

    @Test
    void oneCancelledBeforeItsBookWasWrittenEndsDeletedAndAStopWritesWhatIsLeft() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        Execution kept;
        try (Core api = Core.open(db, "api")) {
            Execution cancelled = api.service().submit(Submission.of("alice", "echo never")).execution();
            assertThat(api.service().cancel(cancelled.id(), "alice")).isEqualTo(CancelResult.CANCELLED_WHILE_QUEUED);
            Await.until("its book written, then retired", Duration.ofSeconds(5),
                    () -> rows.single("SELECT count(*) FROM jobrunr_jobs WHERE id = ? AND state = 'DELETED'",
                            cancelled.jobId().toString()) == 1L);
            kept = api.service().submit(Submission.of("alice", "echo later")).execution();
            // closed at once, before its next write is due
        }
        assertThat(rows.single("SELECT count(*) FROM jobrunr_jobs WHERE id = ? AND state = 'ENQUEUED'",
                kept.jobId().toString())).as("written at the stop").isEqualTo(1L);
    }
}
