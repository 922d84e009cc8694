package io.outrun.worker;

import io.outrun.execution.Execution;
import io.outrun.execution.ExecutionStatus;
import io.outrun.execution.Submission;
import io.outrun.service.Core;
import io.outrun.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.time.Duration;
import java.util.UUID;
import org.jobrunr.jobs.Job;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of issue 24 (not part of the suite): JobRunr's orphan check runs on the master server
 * with the MASTER's poll x 4 (20 s at --poll-interval-s 5), while each node's books refresh its
 * running jobs every 2 x its OWN poll. A node with --poll-interval-s 15 (refresh 30 s) beside a
 * master at 5 s has its running jobs failed as "Orphaned job", and the books never repair it.
 */
class MixedPollOrphanReviewIT {

    @Test
    void aRunningJobOfASlowerPollingNodeStaysProcessing() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core api = Core.open(db, "api");
             WorkerProcess master = WorkerProcess.startWith(db, "orphan-master", 1, "process", "--poll-interval-s", "5")) {
            UUID filler = api.service().submit(Submission.of("alice", "sleep 120")).execution().id();
            Await.until("the filler runs on the master", Duration.ofSeconds(30),
                    () -> api.submissions().find(filler).filter(e -> e.status() == ExecutionStatus.RUNNING).orElse(null));
            try (WorkerProcess slow = WorkerProcess.startWith(db, "orphan-slow", 1, "process", "--poll-interval-s", "15")) {
                UUID id = api.service().submit(Submission.of("bob", "sleep 50; echo done")).execution().id();
                Execution running = Await.until("bob runs on the slow node", Duration.ofSeconds(30),
                        () -> api.submissions().find(id).filter(e -> e.status() == ExecutionStatus.RUNNING).orElse(null));
                assertThat(running.leaseOwner()).startsWith("orphan-slow");
                Thread.sleep(40_000);
                Job job = api.storage().getJobById(running.jobId());
                Execution now = api.submissions().find(id).orElseThrow();
                Object last = job.getJobStates().get(job.getJobStates().size() - 1);
                System.out.printf("REVIEW orphan: execution %s, its job %s (%s)%n", now.status().wire(), job.getState(),
                        last instanceof org.jobrunr.jobs.states.FailedState f ? f.getMessage() + " / " + f.getExceptionMessage() : last);
                assertThat(now.status()).isEqualTo(ExecutionStatus.RUNNING);
                assertThat(job.getState().name()).as("the job of a running execution").isEqualTo("PROCESSING");
                Execution done = Await.until("bob ends", Duration.ofSeconds(60),
                        () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
                Thread.sleep(2000);
                System.out.printf("REVIEW orphan: execution ended %s, its job %s%n", done.status().wire(),
                        api.storage().getJobById(running.jobId()).getState());
            }
            api.service().cancel(filler, "alice");
        }
    }
}
