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
                UUID id = api.service().submit(Submission.of("gina", "true")).execution().id();
                Await.until("end", Duration.ofSeconds(20), () -> api.submissions().find(id).orElseThrow().status().isTerminal());
                Thread.sleep(200);
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

    private static int running(Core api) {
        try (var c = api.pool().getConnection(); var rs = c.createStatement().executeQuery("SELECT running FROM nodes")) {
            return rs.next() ? rs.getInt(1) : -1;
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
