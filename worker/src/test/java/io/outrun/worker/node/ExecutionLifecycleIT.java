package io.outrun.worker.node;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** One in-process worker node with the host-process sandbox on a real PostgreSQL. */
class ExecutionLifecycleIT {

    private Core api;
    private WorkerNode node;

    @BeforeEach
    void start() {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        api = Core.open(db, "api");
        node = WorkerNode.open(db, WorkerConfig.defaults("n1"),
                new ProcessSandbox(), Limits.DEFAULTS);
    }

    @AfterEach
    void stop() {
        node.close();
        api.close();
    }

    @Test
    void runsOnceAndStoresExitCodeAndBothStreams() throws Exception {
        Execution done = runToEnd(Submission.of("alice", "echo hello; echo oops >&2"));
        assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
        assertThat(done.exitCode()).isZero();
        assertThat(done.attempt()).isEqualTo(1);
        assertThat(done.stdout().text()).isEqualTo("hello\n");
        assertThat(done.stderr().text()).isEqualTo("oops\n");
        assertThat(done.startedAt()).isNotNull();
        assertThat(done.finishedAt()).isAfterOrEqualTo(done.startedAt());
    }

    @Test
    void failingCommandEndsFailedWithItsExitCode() throws Exception {
        Execution done = runToEnd(Submission.of("alice", "echo partial; exit 3"));
        assertThat(done.status()).isEqualTo(ExecutionStatus.FAILED);
        assertThat(done.exitCode()).isEqualTo(3);
        assertThat(done.errorCode()).isEqualTo("command_failed");
        assertThat(done.stdout().text()).isEqualTo("partial\n");
    }

    @Test
    void commandPastItsTimeoutEndsTimedOut() throws Exception {
        Execution done = runToEnd(Submission.of("alice", "echo before; sleep 30").withTimeoutMs(1000));
        assertThat(done.status()).isEqualTo(ExecutionStatus.TIMED_OUT);
        assertThat(done.errorCode()).isEqualTo("timed_out");
        assertThat(done.stdout().text()).isEqualTo("before\n");
        assertThat(done.duration(done.finishedAt()).toMillis()).isLessThan(3000);
    }

    @Test
    void cancelKillsARunningCommandWithinTwoSeconds() throws Exception {
        UUID id = api.service().submit(Submission.of("alice", "echo started; sleep 60")).execution().id();
        Await.until("output", Duration.ofSeconds(10), () -> api.submissions().find(id).orElseThrow().stdout().totalBytes() > 0);
        long asked = System.nanoTime();
        assertThat(api.service().cancel(id, "alice")).isEqualTo(io.outrun.core.store.SubmissionStore.CancelResult.REQUESTED);
        Execution done = Await.until("cancelled", Duration.ofSeconds(5), () -> terminal(id));
        long tookMs = (System.nanoTime() - asked) / 1_000_000;
        assertThat(done.status()).isEqualTo(ExecutionStatus.CANCELLED);
        assertThat(tookMs).as("cancel to terminal, ms").isLessThan(2000);
    }

    @Test
    void cancelOfAQueuedExecutionEndsItAtOnceAndRetiresItsJob() throws Exception {
        // Fill the node's slots so the next one stays queued.
        for (int i = 0; i < 4; i++) {
            api.service().submit(Submission.of("alice", "sleep 20"));
        }
        Await.until("slots busy", Duration.ofSeconds(10), () -> node.running() == 4);
        UUID id = api.service().submit(Submission.of("alice", "echo never")).execution().id();
        assertThat(api.service().cancel(id, "alice")).isEqualTo(io.outrun.core.store.SubmissionStore.CancelResult.CANCELLED_WHILE_QUEUED);
        Execution row = api.submissions().find(id).orElseThrow();
        assertThat(row.status()).isEqualTo(ExecutionStatus.CANCELLED);
        assertThat(row.attempt()).isZero();
        // Its book is written off the submit's path within a moment, then retired.
        Await.until("its job retired", Duration.ofSeconds(5), () -> hasState(row.jobId(), "DELETED"));
    }

    private boolean hasState(UUID jobId, String state) {
        try {
            return api.storage().getJobById(jobId).getState().name().equals(state);
        } catch (org.jobrunr.storage.JobNotFoundException e) {
            return false;
        }
    }

    @Test
    void aQueuedRowWithoutAJobRunsAndItsNodeWritesTheJob() throws Exception {
        // An API node that crashed between commit and enqueue leaves exactly this: a row, no job.
        // Nothing wakes a node for it either: the claim loop's poll finds it.
        Execution row = api.submissions().insert(Submission.of("alice", "echo recovered")).execution();
        Execution done = Await.until("done", Duration.ofSeconds(20), () -> terminal(row.id()));
        assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
        assertThat(done.stdout().text()).isEqualTo("recovered\n");
        assertThat(done.bookSeq()).as("the same dispatch: nothing was re-dispatched").isEqualTo(1);
        Await.until("its job written by the node, ended as the execution", Duration.ofSeconds(20), () -> {
            return hasState(row.jobId(), "SUCCEEDED");
        });
    }

    @Test
    void aQueuedExecutionWhoseJobAnAdminDeletedIsCancelledBySweep() throws Exception {
        // Keep the node busy so the execution stays queued while its job is deleted.
        for (int i = 0; i < 4; i++) {
            api.service().submit(Submission.of("alice", "sleep 5"));
        }
        Await.until("slots busy", Duration.ofSeconds(10), () -> node.running() == 4);
        Execution row = api.service().submit(Submission.of("alice", "echo never")).execution();
        Await.until("its book written", Duration.ofSeconds(5), () -> hasState(row.jobId(), "ENQUEUED"));
        org.jobrunr.jobs.Job job = api.storage().getJobById(row.jobId());
        job.delete("an admin on the dashboard");
        api.storage().save(job);
        assertThat(api.sweep().sweep().cancelled()).isEqualTo(1);
        Execution done = terminal(row.id());
        assertThat(done.status()).isEqualTo(ExecutionStatus.CANCELLED);
        assertThat(done.attempt()).isZero();
        assertThat(done.errorMessage()).contains("Cancelled by an admin from the dashboard");
    }

    private Execution runToEnd(Submission s) throws InterruptedException {
        UUID id = api.service().submit(s).execution().id();
        return Await.until("execution " + id + " to end", Duration.ofSeconds(30), () -> terminal(id));
    }

    private Execution terminal(UUID id) {
        Execution e = api.submissions().find(id).orElseThrow();
        return e.status().isTerminal() ? e : null;
    }
}
