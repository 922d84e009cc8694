package io.outrun.worker.node;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The heartbeat's statement hangs (a lock held on the very lease row it renews, as a stuck
 * database would): the renewal fails at its bound instead of hanging, the watchdog kills the run
 * before the lease can be re-driven, and the late renewal never revives the lease.
 */
class HungDatabaseIT {

    private static final Duration TTL = Duration.ofSeconds(3);

    @Test
    void aHungRenewalKillsTheRunBeforeItsNextAttemptAndNeverRevivesTheLease() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Path beats = Files.createTempFile("outrun-hung-", ".log");
        try (Core api = Core.open(db, "api");
             WorkerProcess w = WorkerProcess.startWith(db, "hung-a", 2, "process", "--lease-ttl-ms", Long.toString(TTL.toMillis()),
                     "--sweep-interval-ms", "1000")) {
            // The run writes its pid and a timestamp (ns) every 50 ms.
            UUID id = api.service().submit(Submission.of("alice", "for i in $(seq 200); do echo \"$$ $(date +%s%N)\" >> "
                    + beats + "; sleep 0.05; done; echo done")).execution().id();
            Await.until("running", Duration.ofSeconds(30), () -> api.submissions().find(id).orElseThrow().status() == ExecutionStatus.RUNNING
                    && fileSize(beats) > 0);
            try (Connection lock = DriverManager.getConnection(db.url(), db.user(), db.password())) {
                lock.setAutoCommit(false);
                try (PreparedStatement ps = lock.prepareStatement("SELECT 1 FROM leases WHERE execution_id = ? FOR UPDATE")) {
                    ps.setObject(1, id);
                    ps.executeQuery().close();
                }
                // Held until the lease has been lapsed for a whole ttl (the heartbeat cannot renew it).
                Await.until("the lease lapsed a ttl ago", TTL.multipliedBy(6), () -> Rows.on(api.pool()).single(
                        "SELECT count(*) FROM leases WHERE execution_id = ? AND expires_at < now() - ? * interval '1 millisecond'",
                        id, TTL.toMillis()) == 1);
                lock.rollback();
            }
            Execution done = Await.until("ended", Duration.ofSeconds(60),
                    () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
            assertThat(done.attempt()).as("the hung attempt was given up and re-run").isEqualTo(2);
            assertThat(w.log()).contains("heartbeat failed");
            // Two killers race to end the hung run, both correct: the JVM's watchdog at its deadline
            // (ttl - ttl/4 after the last confirmed renewal) or the run's own kill switch (its lease
            // file's second, checked once a second), whose SIGKILL the job then reads as a lost lease.
            assertThat(w.log()).containsAnyOf("no lease renewal confirmed in time", "lease lost; its run is killed");

            // The first run's last sign of life comes before the second one started.
            List<long[]> runs = spans(beats);
            assertThat(runs).hasSize(2);
            Instant secondStarted = done.startedAt();
            long firstLast = runs.get(0)[1];
            long gapMs = secondStarted.toEpochMilli() - firstLast / 1_000_000;
            System.out.printf("HUNG: attempt 1 last seen %d ms before attempt 2 started%n", gapMs);
            assertThat(gapMs).as("attempt 1 dead before attempt 2 started").isPositive();
        }
    }

    private static long fileSize(Path p) {
        try {
            return Files.size(p);
        } catch (java.io.IOException e) {
            return 0;
        }
    }

    /** Per run (pid), in order of appearance: its first and last timestamps. */
    private static List<long[]> spans(Path file) throws java.io.IOException {
        java.util.LinkedHashMap<String, long[]> spans = new java.util.LinkedHashMap<>();
        for (String line : Files.readAllLines(file)) {
            String[] parts = line.split(" ");
            long t = Long.parseLong(parts[1]);
            spans.merge(parts[0], new long[] {t, t}, (x, y) -> new long[] {Math.min(x[0], y[0]), Math.max(x[1], y[1])});
        }
        return new ArrayList<>(spans.values());
    }
}
