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
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static io.outrun.testing.LogLines.count;

/**
 * A fleet under fire: while executions keep arriving, a random worker JVM is SIGKILLed while it
 * runs executions, and replaced by a new one, eight times. Every execution must still end, once, succeeded, with the
 * output of one whole attempt; nothing may stay queued, running, or processing in JobRunr.
 */
class ChaosIT {

    private static final int ROUNDS = 8;
    private static final int FIRST_WAVE = 120;
    private static final int PER_ROUND = 15;

    @Test
    void everyExecutionEndsOnceWithItsOwnOutputWhileWorkersKeepDying() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        Random random = new Random(20261129); // the same sequence of victims and sleeps on every run
        List<WorkerProcess> fleet = new ArrayList<>();
        List<WorkerProcess> dead = new ArrayList<>();
        Map<UUID, Integer> ids = new HashMap<>();
        int killed = 0;
        try (Core api = Core.open(db, "api")) {
            for (int n = 0; n < 3; n++) {
                fleet.add(WorkerProcess.start(db, "chaos-" + n, 4));
            }
            submit(api, ids, FIRST_WAVE, random);
            for (int round = 1; round <= ROUNDS; round++) {
                submit(api, ids, PER_ROUND, random); // work for every node, the victim's included
                WorkerProcess victim = fleet.remove(random.nextInt(fleet.size()));
                // Kill only while it holds running executions: every kill must cost real work.
                Await.until(victim.nodeId() + " running executions", Duration.ofSeconds(60),
                        () -> runningOn(rows, victim.nodeId()) >= 2);
                victim.kill();
                dead.add(victim);
                killed++;
                fleet.add(WorkerProcess.start(db, "chaos-r" + round, 4));
            }

            // Every node that could end these is alive now: each must log its end exactly once.
            java.util.Set<UUID> endedBySurvivors = new java.util.HashSet<>();
            for (UUID id : ids.keySet()) {
                if (!api.submissions().find(id).orElseThrow().status().isTerminal()) {
                    endedBySurvivors.add(id);
                }
            }
            assertThat(endedBySurvivors).as("executions still running after the last kill").isNotEmpty();

            Map<UUID, Execution> ended = new HashMap<>();
            Await.until("all " + ids.size() + " executions ended", Duration.ofSeconds(180), () -> {
                ids.keySet().stream().filter(id -> !ended.containsKey(id))
                        .forEach(id -> api.submissions().find(id).filter(e -> e.status().isTerminal()).ifPresent(e -> ended.put(id, e)));
                return ended.size() == ids.size();
            });

            int redriven = 0;
            for (Map.Entry<UUID, Integer> entry : ids.entrySet()) {
                Execution e = ended.get(entry.getKey());
                int i = entry.getValue();
                assertThat(e.status()).as("execution %d: %s", i, e.errorMessage()).isEqualTo(ExecutionStatus.SUCCEEDED);
                assertThat(e.stdout().text()).as("execution %d", i).isEqualTo("start-" + i + "\ndone-" + i + "\n");
                if (e.attempt() > 1) {
                    redriven++;
                }
            }
            String survivors = logs(fleet);
            String logs = survivors + logs(dead);
            for (UUID id : ids.keySet()) {
                // A node logs an end after its fenced write committed (a killed node may not get to),
                // and only the last attempt can end.
                String anyAttempt = "execution " + id + " attempt \\d+ ended";
                String lastAttempt = "execution " + id + " attempt " + ended.get(id).attempt() + " ended";
                assertThat(count(logs, anyAttempt)).as("ends logged for " + id).isLessThanOrEqualTo(1)
                        .isEqualTo(count(logs, lastAttempt));
                if (endedBySurvivors.contains(id)) {
                    assertThat(count(survivors, lastAttempt)).as("end logged by a surviving node for " + id).isEqualTo(1);
                }
            }
            assertThat(rows.single("SELECT count(*) FROM executions WHERE status IN ('queued', 'running')")).isZero();
            // A node killed right after an end leaves its job open: the sweep ends it after its grace.
            try {
                Await.until("no JobRunr job left active", Duration.ofSeconds(30),
                        () -> rows.single("SELECT count(*) FROM jobrunr_jobs WHERE state IN ('ENQUEUED', 'PROCESSING')") == 0);
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; still active: " + activeJobs(db), e);
            }
            System.out.printf("CHAOS: %d executions, %d workers SIGKILLed, %d executions re-driven, all succeeded once%n",
                    ids.size(), killed, redriven);
            assertThat(redriven).as("the kills hit running executions").isPositive();
        } finally {
            for (WorkerProcess w : fleet) {
                w.close();
            }
        }
    }

    /** The jobs still active and their executions, for the failure's message. */
    private static String activeJobs(DatabaseConfig db) throws java.sql.SQLException {
        StringBuilder b = new StringBuilder();
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(db.url(), db.user(), db.password());
             java.sql.ResultSet rs = c.createStatement().executeQuery("""
                     SELECT j.id, j.state, j.updatedAt, x.id AS execution, x.status, x.attempt, x.finished_at
                     FROM jobrunr_jobs j LEFT JOIN executions x ON x.job_id = j.id::uuid
                     WHERE j.state IN ('ENQUEUED', 'PROCESSING')""")) {
            while (rs.next()) {
                b.append(String.format("%n  job %s %s updated %s: execution %s %s attempt %s finished %s", rs.getString(1),
                        rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5), rs.getString(6), rs.getString(7)));
            }
        }
        return b.toString();
    }

    private static long runningOn(Rows rows, String node) {
        return rows.single("SELECT count(*) FROM executions WHERE status = 'running' AND lease_owner LIKE ? || '/%'", node);
    }

    private static void submit(Core api, Map<UUID, Integer> ids, int count, Random random) {
        for (int n = 0; n < count; n++) {
            int i = ids.size();
            // 1.0 to 2.9 s: enough work in flight that every kill lands on running executions.
            String command = "echo start-" + i + "; sleep " + (1 + random.nextInt(2)) + "." + random.nextInt(10) + "; echo done-" + i;
            ids.put(api.service().submit(Submission.of("alice", command).withMaxAttempts(10)).execution().id(), i);
        }
    }

    private static String logs(List<WorkerProcess> nodes) throws java.io.IOException {
        StringBuilder b = new StringBuilder();
        for (WorkerProcess w : nodes) {
            b.append(w.log());
        }
        return b.toString();
    }
}
