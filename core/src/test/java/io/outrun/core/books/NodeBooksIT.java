package io.outrun.core.books;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.jobrunr.jobs.states.StateName;
import org.jobrunr.server.BackgroundJobServer;
import org.jobrunr.server.JobActivator;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.jobrunr.server.BackgroundJobServerConfiguration.usingStandardBackgroundJobServerConfiguration;

/**
 * A node's books and a run's progress, written through {@link Books}, the one writer: a claimed
 * execution's job shows PROCESSING on the node's JobRunr server, a report of the run's progress
 * shows as JobRunr's progress bar and a line of the job's dashboard log, and the end as its
 * execution ended, with the summary on its page. No worker runs here: the books are driven as
 * a node drives them.
 */
class NodeBooksIT {

    private static final JobActivator NO_JOBS = new JobActivator() {
        @Override
        public <T> T activateJob(Class<T> type) {
            return null;
        }
    };

    @Test
    void aClaimedJobRunsShowsItsProgressAndEndsAsItsExecution() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        try (Core api = Core.open(db, "api")) {
            UUID id = rows.execution().owner("alice").command("make shards").status("running").attempt(1)
                    .lease("n/1", Duration.ofMinutes(1)).insert();
            Execution e = api.submissions().find(id).orElseThrow();
            api.books().enqueue(id, e.bookSeq(), "alice", "make shards");
            BackgroundJobServer server = new BackgroundJobServer(api.storage(), api.jsonMapper(), NO_JOBS,
                    usingStandardBackgroundJobServerConfiguration().andName("n").andWorkerCount(1));
            server.start();
            try (JobBooks books = new JobBooks(api.books(), () -> server, Duration.ofSeconds(10));
                 ProgressOnDashboard progress = new ProgressOnDashboard(api.books())) {
                books.claimed(e);
                Await.until("its job processing", Duration.ofSeconds(10),
                        () -> api.storage().getJobById(e.jobId()).hasState(StateName.PROCESSING));

                progress.report(e.jobId(), 40, "2 of 5 shards");
                Await.until("its progress on the dashboard", Duration.ofSeconds(10),
                        () -> api.jsonMapper().serialize(api.storage().getJobById(e.jobId())).contains("2 of 5 shards"));
                assertThat(api.storage().getJobById(e.jobId()).getMetadata().keySet())
                        .anyMatch(k -> k.startsWith("jobRunrDashboardProgressBar"));

                books.ended(e.jobId(), BookEntry.as(ExecutionStatus.SUCCEEDED, "", () -> List.of("all shards made")));
                Await.until("its job ended", Duration.ofSeconds(10),
                        () -> api.storage().getJobById(e.jobId()).hasState(StateName.SUCCEEDED));
                assertThat(api.jsonMapper().serialize(api.storage().getJobById(e.jobId()))).contains("all shards made");
                Await.until("the books forget it", Duration.ofSeconds(5), () -> books.size() == 0);
            } finally {
                server.stop();
            }
        }
    }
}
