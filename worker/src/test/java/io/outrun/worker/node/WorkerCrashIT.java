package io.outrun.worker.node;

import io.outrun.worker.lease.LeaseStore;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.core.store.Lease;
import io.outrun.core.store.Outcome;
import io.outrun.core.store.OutputUpdate;
import io.outrun.testing.Await;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static io.outrun.testing.LogLines.count;

/** Real worker JVMs, one SIGKILLed mid-run: every execution still ends once, with its own output. */
class WorkerCrashIT {

    @Test
    void killedWorkersExecutionsAreRedrivenAndEachFinishesExactlyOnce() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core api = Core.open(db, "api");
             WorkerProcess a = WorkerProcess.start(db, "node-a", 10);
             WorkerProcess b = WorkerProcess.start(db, "node-b", 10)) {
            List<UUID> ids = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                ids.add(api.service().submit(Submission.of("alice", "echo start-" + i + "; sleep 6; echo done-" + i))
                        .execution().id());
            }
            Await.until("all 20 running", Duration.ofSeconds(30), () -> ids.stream()
                    .allMatch(id -> api.submissions().find(id).orElseThrow().status() == ExecutionStatus.RUNNING));
            Map<UUID, String> ownerAtKill = new HashMap<>();
            Map<UUID, Long> epochAtKill = new HashMap<>();
            ids.forEach(id -> {
                Execution running = api.submissions().find(id).orElseThrow();
                ownerAtKill.put(id, running.leaseHolder());
                epochAtKill.put(id, running.leaseEpoch());
            });
            assertThat(ownerAtKill.values()).anyMatch(o -> o.startsWith("node-a/"));

            Instant killedAt = dbNow(api);
            a.kill();

            Map<UUID, Execution> done = new HashMap<>();
            Await.until("all 20 ended", Duration.ofSeconds(90), () -> {
                ids.forEach(id -> api.submissions().find(id).filter(e -> e.status().isTerminal()).ifPresent(e -> done.put(id, e)));
                return done.size() == ids.size();
            });

            // A node logs an end only after its fenced finish committed: wait for every line, then
            // stop the surviving node, so that its log is complete (a duplicate end would be in it).
            Await.until("every end logged", Duration.ofSeconds(10), () -> {
                try {
                    String logs = a.log() + b.log();
                    return ids.stream().allMatch(id -> count(logs, "execution " + id + " attempt \\d+ ended") >= 1);
                } catch (java.io.IOException e) {
                    throw new IllegalStateException(e);
                }
            });
            b.close();
            String logs = a.log() + b.log();
            double worstRecoveryS = 0;
            for (int i = 0; i < ids.size(); i++) {
                UUID id = ids.get(i);
                Execution e = done.get(id);
                assertThat(e.status()).as("status of " + i).isEqualTo(ExecutionStatus.SUCCEEDED);
                assertThat(e.stdout().text()).isEqualTo("start-" + i + "\ndone-" + i + "\n");
                boolean wasOnA = ownerAtKill.get(id).startsWith("node-a/");
                assertThat(e.attempt()).as("attempt of " + i).isEqualTo(wasOnA ? 2 : 1);
                assertThat(count(logs, "execution " + id + " attempt \\d+ ended")).as("finishes of " + i).isEqualTo(1);
                if (wasOnA) {
                    worstRecoveryS = Math.max(worstRecoveryS, Duration.between(killedAt, e.startedAt()).toMillis() / 1000.0);
                }
            }
            System.out.printf("RECOVERY: SIGKILL to restart on another node, worst of %d executions: %.1f s%n",
                    ownerAtKill.values().stream().filter(o -> o.startsWith("node-a/")).count(), worstRecoveryS);
            assertThat(worstRecoveryS).as("recovery after SIGKILL, s").isLessThan(20.0);

            // A late write from the dead attempt is fenced out and changes nothing.
            UUID redriven = ids.stream().filter(id -> ownerAtKill.get(id).startsWith("node-a/")).findFirst().orElseThrow();
            Lease dead = new Lease(redriven, epochAtKill.get(redriven), 1, ownerAtKill.get(redriven));
            OutputUpdate stale = new OutputUpdate(dead, java.util.List.of(new io.outrun.core.store.Chunk(redriven, dead.epoch(), 1, 0,
                    "stale".getBytes(StandardCharsets.UTF_8))), 0, 0);
            boolean written = new LeaseStore(api.pool()).finish(dead, new Outcome(ExecutionStatus.FAILED, 1, "command_failed", "stale", stale, 5, 0)).written();
            assertThat(written).isFalse();
            Execution after = api.submissions().find(redriven).orElseThrow();
            assertThat(after.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
            assertThat(after.attempt()).isEqualTo(2);
            assertThat(after.stdout().text()).isEqualTo(done.get(redriven).stdout().text());
            assertThat(after.finishedAt()).isEqualTo(done.get(redriven).finishedAt());

            // The dashboard tells the truth: no job of a dead attempt is left PROCESSING.
            assertThat(processingJobs(api)).isZero();
        }
    }

    @Test
    void executionWhoseWorkerDiesOnEveryAttemptIsReapedWithAnExplanation() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core api = Core.open(db, "api")) {
            UUID id = api.service().submit(Submission.of("alice", "echo attempt; sleep 120").withMaxAttempts(2))
                    .execution().id();
            for (int attempt = 1; attempt <= 2; attempt++) {
                try (WorkerProcess w = WorkerProcess.start(db, "doomed-" + attempt, 1)) {
                    int expected = attempt;
                    Await.until("attempt " + attempt + " running", Duration.ofSeconds(40), () -> {
                        Execution e = api.service().get(id, "alice").orElseThrow();
                        return e.status() == ExecutionStatus.RUNNING && e.attempt() == expected;
                    });
                    w.kill();
                }
            }
            // No worker is left: the owner's polls re-drive opportunistically, and reap.
            Execution failed = Await.until("reaped", Duration.ofSeconds(30),
                    () -> api.service().get(id, "alice").filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(failed.status()).isEqualTo(ExecutionStatus.FAILED);
            assertThat(failed.attempt()).isEqualTo(2);
            assertThat(failed.errorCode()).isEqualTo("lease_expired");
            assertThat(failed.errorMessage()).contains("Attempt 2 of 2 was lost", "(doomed-2/", "no attempts remain");
            assertThat(failed.exitCode()).isNull();
        }
    }

    private static Instant dbNow(Core core) throws Exception {
        try (Connection c = core.pool().getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT now()")) {
            rs.next();
            Timestamp t = rs.getTimestamp(1);
            return t.toInstant();
        }
    }

    private static int processingJobs(Core core) {
        return (int) Rows.on(core.pool()).single("SELECT count(*) FROM jobrunr_jobs WHERE state = 'PROCESSING'");
    }
}
