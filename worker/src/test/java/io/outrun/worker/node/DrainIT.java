package io.outrun.worker.node;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A rolling deploy's SIGTERM drains a worker: what can finish within the drain time finishes
 * there, the rest is handed back without spending an attempt, new work goes elsewhere, and the
 * node exits 0; `outrun nodes` shows the fleet before and after, and `outrun drain` does the same
 * from anywhere.
 */
class DrainIT {

    @Test
    void sigtermLetsShortWorkFinishHandsLongWorkBackUnchargedAndExitsZero() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        String[] dbArgs = {"--db-url", db.url(), "--db-user", db.user(), "--db-password", db.password()};
        try (Core api = Core.open(db, "api")) {
            WorkerProcess a = WorkerProcess.startWith(db, "drain-a", 2, "process", "--drain-timeout-ms", "10000");
            UUID shortOne = api.service().submit(Submission.of("alice", "echo s-start; sleep 5; echo s-done")).execution().id();
            UUID longOne = api.service().submit(Submission.of("alice", "echo l-start; sleep 600")).execution().id();
            Await.until("both running on a", Duration.ofSeconds(30), () -> running(api, shortOne) && running(api, longOne));
            try (WorkerProcess b = WorkerProcess.startWith(db, "drain-b", 2, "process", "--drain-timeout-ms", "2000")) {
                String nodes = WorkerProcess.cli(concat(new String[] {"nodes"}, dbArgs));
                assertThat(nodes).contains("drain-a", "drain-b");

                long t0 = System.nanoTime();
                a.sendTerm();
                UUID fresh = api.service().submit(Submission.of("alice", "echo fresh")).execution().id();
                Execution freshDone = Await.until("new work ran elsewhere", Duration.ofSeconds(30),
                        () -> api.submissions().find(fresh).filter(e -> e.status().isTerminal()).orElse(null));
                assertThat(freshDone.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
                assertThat(b.log()).contains("execution " + fresh + " attempt 1");

                assertThat(a.awaitExit(Duration.ofSeconds(60))).as("a drained node exits 0").isZero();
                double drainedS = (System.nanoTime() - t0) / 1e9;
                System.out.printf("DRAIN: SIGTERM to exit %.1f s (drain timeout 10 s)%n", drainedS);
                Execution shortDone = api.submissions().find(shortOne).orElseThrow();
                assertThat(shortDone.status()).as("finished within the drain time, where it ran").isEqualTo(ExecutionStatus.SUCCEEDED);
                assertThat(shortDone.attempt()).isEqualTo(1);
                assertThat(a.log()).contains("execution " + shortOne + " attempt 1 ended succeeded");

                Execution longAgain = Await.until("the long one runs on b", Duration.ofSeconds(30), () -> api.submissions().find(longOne)
                        .filter(e -> e.status() == ExecutionStatus.RUNNING && e.leaseHolder().startsWith("drain-b/")).orElse(null));
                assertThat(longAgain.attempt()).as("handed back without spending an attempt").isEqualTo(1);
                assertThat(a.log()).contains("handed back by its draining node");

                Await.until("only b listed", Duration.ofSeconds(10), () -> {
                    try {
                        String now = WorkerProcess.cli(concat(new String[] {"nodes"}, dbArgs));
                        return now.contains("drain-b") && !now.contains("drain-a");
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });

                // outrun drain from anywhere: b hands its run back and exits 0 as well.
                assertThat(WorkerProcess.cli(concat(new String[] {"drain", "drain-b"}, dbArgs))).contains("asked 1 node");
                assertThat(b.awaitExit(Duration.ofSeconds(60))).isZero();
                Execution queued = api.submissions().find(longOne).orElseThrow();
                assertThat(queued.status()).isEqualTo(ExecutionStatus.QUEUED);
                assertThat(queued.attempt()).as("still no attempt spent").isZero();
                api.service().cancel(longOne, "alice");
            } finally {
                a.close();
            }
        }
    }

    private static boolean running(Core api, UUID id) {
        Execution e = api.submissions().find(id).orElseThrow();
        return e.status() == ExecutionStatus.RUNNING && e.leaseHolder().startsWith("drain-a/") && e.stdout().totalBytes() > 0;
    }

    private static String[] concat(String[] a, String[] b) {
        String[] all = new String[a.length + b.length];
        System.arraycopy(a, 0, all, 0, a.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }
}
