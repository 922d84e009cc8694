package io.outrun.worker;

import io.outrun.execution.Execution;
import io.outrun.execution.ExecutionStatus;
import io.outrun.execution.Submission;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.service.Core;
import io.outrun.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The onboarding gate (io.outrun.dispatch.OnboardingGate) saves JobRunr's end-of-job query on an
 * idle node, and never strands work: with JobRunr's poll 60 s away, a burst of three times the
 * node's slots must still all run through job ends chaining, as stock JobRunr's would.
 */
class OnboardingGateIT {

    @Test
    void idleJobEndsSkipTheQueryAndABurstStillChains() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        WorkerConfig config = WorkerConfig.defaults("gate").withSlots(2).withPollInterval(Duration.ofSeconds(60));
        try (Core api = Core.open(db, "api", Duration.ofSeconds(15));
             WorkerNode node = WorkerNode.open(db, config, new ProcessSandbox(), Limits.DEFAULTS)) {
            // One at a time on a node that was never full: each arrives by wake-up, and the job's
            // end has nothing to look for.
            for (int i = 0; i < 4; i++) {
                long decided = node.onboardingGate().jobEnds();
                UUID id = api.service().submit(Submission.of("gina", "true")).execution().id();
                Await.until("end", Duration.ofSeconds(20), () -> api.submissions().find(id).orElseThrow().status().isTerminal());
                // Its job's end has been decided before the next submit wakes the node.
                Await.until("the job's end decided", Duration.ofSeconds(10),
                        () -> node.onboardingGate().jobEnds() > decided ? true : null);
            }
            assertThat(node.onboardingGate().skipped()).as("job ends that skipped the onboarding query").isGreaterThanOrEqualTo(3);

            // A burst larger than the node: the wake-up fills both slots, the rest is found by job ends.
            List<UUID> burst = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                burst.add(api.service().submit(Submission.of("gina-" + i, "sleep 0.3")).execution().id());
            }
            for (UUID id : burst) {
                Execution done = Await.until("burst execution " + id + " ended (the poll is 60 s away)", Duration.ofSeconds(30),
                        () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
                assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
            }
        }
    }

    /**
     * Work submitted while every node looks busy (their last heartbeat said full) but one has just
     * freed a slot: no free node to wake, so the busy ones are told (Notifier.wakeNodes), and the
     * one with the free slot onboards it at once. Without that it would wait for JobRunr's poll:
     * the job end that freed the slot had looked already, and the next one skips.
     */
    @Test
    void workSubmittedWhileTheFleetLooksBusyIsStillPickedUp() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        // Beats every 10 s (ttl/3), so the heartbeat stays stale for seconds after a slot frees.
        WorkerConfig config = WorkerConfig.defaults("gate-busy").withSlots(2).withPollInterval(Duration.ofSeconds(60))
                .withLeaseTtl(Duration.ofSeconds(30));
        try (Core api = Core.open(db, "api", Duration.ofSeconds(15));
             WorkerNode node = WorkerNode.open(db, config, new ProcessSandbox(), Limits.DEFAULTS)) {
            UUID shortRun = api.service().submit(Submission.of("hal", "sleep 12")).execution().id();
            UUID longRun = api.service().submit(Submission.of("ivy", "sleep 45")).execution().id();
            Await.until("the node's beat says it is full", Duration.ofSeconds(25), () -> running(api) == 2 ? true : null);
            Await.until("the short run ended", Duration.ofSeconds(30),
                    () -> api.submissions().find(shortRun).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(running(api)).as("the heartbeat still says full").isEqualTo(2);
            UUID late = api.service().submit(Submission.of("jo", "true")).execution().id();
            Execution done = Await.until("the late one ran (the poll is 60 s away, the long run 30 s)", Duration.ofSeconds(15),
                    () -> api.submissions().find(late).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
            assertThat(api.submissions().find(longRun).orElseThrow().status().isTerminal()).isFalse();
        }
    }

    /**
     * Review: the only node the fleet wakes (its beat still says free) is full by now, and the
     * node with a free slot looks busy: the woken node passes the wake-up on, so the work starts
     * at once, not at a job end (which skips) nor at the poll (60 s away).
     */
    @Test
    void aFullNodeWokenAsFreePassesTheWakeUpOn() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Duration poll = Duration.ofSeconds(60);
        // Beats every 40 s: a beat stays stale for the whole test.
        WorkerConfig aCfg = WorkerConfig.defaults("stale-a").withSlots(1).withPollInterval(poll)
                .withLeaseTtl(Duration.ofSeconds(120)).withLostDispatchGrace(Duration.ofMinutes(5));
        WorkerConfig bCfg = WorkerConfig.defaults("stale-b").withSlots(2).withPollInterval(poll)
                .withLeaseTtl(Duration.ofSeconds(120)).withLostDispatchGrace(Duration.ofMinutes(5));
        try (Core api = Core.open(db, "api", Duration.ofMinutes(5));
             WorkerNode a = WorkerNode.open(db, aCfg, new ProcessSandbox(), Limits.DEFAULTS)) {
            UUID longRun = api.service().submit(Submission.of("lou", "sleep 60")).execution().id();
            Await.until("the long run on A", Duration.ofSeconds(20), () -> api.submissions().find(longRun)
                    .filter(e -> e.status() == ExecutionStatus.RUNNING).orElse(null));
            UUID shortRun = api.service().submit(Submission.of("sam", "sleep 20")).execution().id();
            try (WorkerNode b = WorkerNode.open(db, bCfg, new ProcessSandbox(), Limits.DEFAULTS)) {
                Await.until("the short run on B", Duration.ofSeconds(20), () -> api.submissions().find(shortRun)
                        .filter(e -> e.status() == ExecutionStatus.RUNNING).orElse(null));
                // What B's beat would say had it beaten while it ran two runs; A's predates its run.
                sql(api, "UPDATE nodes SET running = slots WHERE node_id = 'stale-b'");
                sql(api, "UPDATE nodes SET running = 0 WHERE node_id = 'stale-a'");
                UUID late = api.service().submit(Submission.of("lee", "true")).execution().id();
                Execution done = Await.until("the late one ran on B at once (its run ends in 20 s, the poll in 60 s)",
                        Duration.ofSeconds(10), () -> api.submissions().find(late).filter(e -> e.status().isTerminal()).orElse(null));
                assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
            }
        }
    }

    /**
     * Review: a hand-back's job waits out its delay SCHEDULED, and JobRunr's master enqueues it
     * without a notification; the filter it runs then ({@code DueWake}) wakes the fleet, so the
     * work starts at once instead of at the next poll (a job's end no longer looks for it).
     */
    @Test
    void aJobEnqueuedWhenItsDelayEndsWakesTheFleet() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        WorkerConfig config = WorkerConfig.defaults("due").withSlots(2).withPollInterval(Duration.ofSeconds(60))
                .withLostDispatchGrace(Duration.ofMinutes(5));
        try (Core api = Core.open(db, "api", Duration.ofMinutes(5));
             WorkerNode node = WorkerNode.open(db, config, new ProcessSandbox(), Limits.DEFAULTS)) {
            // Past JobRunr's first poll (a look of the gate's), so only a wake-up can start it now.
            Await.until("JobRunr's first poll", Duration.ofSeconds(20), () -> node.onboardingGate().otherLooks() >= 1 ? true : null);
            Execution x = api.submissions().insert(Submission.of("xia", "true")).execution();
            api.dispatcher().enqueueIn(Duration.ofSeconds(1), x.id(), x.dispatchSeq(), x.owner(), "true", 2);
            org.jobrunr.jobs.Job job = api.storage().getJobById(io.outrun.execution.JobIds.of(x.id(), x.dispatchSeq()));
            assertThat(job.getState().name()).isEqualTo("SCHEDULED");
            org.jobrunr.jobs.states.JobState scheduled = job.getJobState();
            // What the master's ProcessScheduledJobsTask does at its tick: enqueue, save, run the filters.
            job.enqueue();
            api.storage().save(job);
            new io.outrun.dispatch.DueWake(api.dispatcher()).onStateApplied(job, scheduled, job.getJobState());
            Execution done = Await.until("it ran at once (the poll is 60 s away)", Duration.ofSeconds(10),
                    () -> api.submissions().find(x.id()).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
        }
    }

    /**
     * Review: JobRunr skips a look silently while another holds its onboarding lock, and that one
     * may have queried before the new work committed. The wake-up's look is retried once the lock
     * is free, so the work starts then, not at the poll (60 s away) nor at a job end (none runs).
     */
    @Test
    void aWakeUpThatFindsAnotherLookUnderwayIsNotLost() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        WorkerConfig config = WorkerConfig.defaults("locked").withSlots(2).withPollInterval(Duration.ofSeconds(60));
        try (Core api = Core.open(db, "api", Duration.ofSeconds(15));
             WorkerNode node = WorkerNode.open(db, config, new ProcessSandbox(), Limits.DEFAULTS)) {
            Await.until("JobRunr's first poll", Duration.ofSeconds(20), () -> node.onboardingGate().otherLooks() >= 1 ? true : null);
            java.util.concurrent.locks.ReentrantLock lock = onboardingLock(node);
            UUID id;
            lock.lock();
            try {
                id = api.service().submit(Submission.of("kai", "true")).execution().id();
                // The look another thread would be running: long enough for the wake-up to arrive.
                Thread.sleep(500);
                assertThat(api.submissions().find(id).orElseThrow().status()).isEqualTo(ExecutionStatus.QUEUED);
            } finally {
                lock.unlock();
            }
            Execution done = Await.until("it ran once the lock was free (the poll is 60 s away)", Duration.ofSeconds(10),
                    () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
        }
    }

    /** JobRunr's lock around one onboarding look (JobSteward's OnboardNewWorkTask), as it holds it while querying. */
    private static java.util.concurrent.locks.ReentrantLock onboardingLock(WorkerNode node) throws ReflectiveOperationException {
        Object steward = node.server().getJobSteward();
        java.lang.reflect.Field task = steward.getClass().getDeclaredField("onboardNewWorkTask");
        task.setAccessible(true);
        Object onboarding = task.get(steward);
        java.lang.reflect.Field lock = onboarding.getClass().getDeclaredField("reentrantLock");
        lock.setAccessible(true);
        return (java.util.concurrent.locks.ReentrantLock) lock.get(onboarding);
    }

    private static void sql(Core api, String sql) {
        try (var c = api.pool().getConnection(); var st = c.createStatement()) {
            st.execute(sql);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static int running(Core api) {
        try (var c = api.pool().getConnection(); var rs = c.createStatement().executeQuery("SELECT running FROM nodes")) {
            return rs.next() ? rs.getInt(1) : -1;
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
