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
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fair by construction, across two real worker JVMs and no caps: each slot that frees goes to the
 * owner with the fewest running executions, so another owner's first execution takes the first
 * slot that frees however long or many the busy owner's commands are, and a lone owner still
 * fills every slot.
 */
class FairDispatchIT {

    @Test
    void anotherOwnersFirstExecutionTakesTheFirstSlotThatFreesBehindLongCommands() throws Exception {
        // The first of carol's runs end about 17 s after dave's submit.
        Duration waited = daveBehind(60, "sleep 20", "fair-a", "fair-b");
        assertThat(waited).as("the first slot frees about 17 s after dave's submit").isLessThan(Duration.ofSeconds(22));
    }

    @Test
    void anotherOwnersFirstExecutionStartsWithinSecondsBehindManyShortCommands() throws Exception {
        Duration waited = daveBehind(400, "sleep 1", "fair-c", "fair-d");
        assertThat(waited).as("a 1 s command ends within about a second").isLessThan(Duration.ofSeconds(3));
    }

    /**
     * Carol queues {@code count} × {@code command} on two nodes of 2 slots; dave submits one
     * command 3 s after carol's fill the 4 slots. Returns how long dave's waited for its start.
     */
    private static Duration daveBehind(int count, String command, String nodeA, String nodeB) throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core api = Core.open(db, "api");
             WorkerProcess a = WorkerProcess.start(db, nodeA, 2);
             WorkerProcess b = WorkerProcess.start(db, nodeB, 2)) {
            for (int i = 0; i < count; i++) {
                api.service().submit(Submission.of("carol", command));
            }
            Await.until("carol fills the 4 slots", Duration.ofSeconds(30), () -> count(api, "carol", "running") == 4);
            // Dave comes 3 s after carol's work started, as in the issue (by the database's clock).
            Await.until("carol's work started 3 s ago", Duration.ofSeconds(30), () -> Rows.on(api.pool()).single(
                    "SELECT count(*) FROM executions WHERE owner = 'carol' AND started_at <= now() - interval '3 seconds'") > 0);
            UUID dave = api.service().submit(Submission.of("dave", "echo dave")).execution().id();
            Execution done = Await.until("dave's execution ran", Duration.ofSeconds(60),
                    () -> api.submissions().find(dave).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
            Duration waited = Duration.between(done.createdAt(), done.startedAt());
            System.out.printf("FAIR: dave's execution started %d ms after its submission, behind %d x `%s` of carol's"
                    + " on 4 slots%n", waited.toMillis(), count, command);
            cancelAll(api);
            return waited;
        }
    }

    @Test
    void aLoneOwnerKeepsEverySlotOfTwoNodesBusy() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core api = Core.open(db, "api");
             WorkerProcess a = WorkerProcess.start(db, "fair-e", 4);
             WorkerProcess b = WorkerProcess.start(db, "fair-f", 4)) {
            for (int i = 0; i < 40; i++) {
                api.service().submit(Submission.of("erin", "sleep 2"));
            }
            Await.until("all of erin's ended", Duration.ofSeconds(90), () -> count(api, "erin", "succeeded") == 40);
            // How busy the 8 slots were from the first start to the last end (database clock): 40
            // runs of 2 s are 80 slot-seconds, 10 s of 8 slots when every freed slot refills at once.
            double busy = Rows.on(api.pool()).single("SELECT (1000 * sum(extract(epoch FROM finished_at - started_at))"
                    + " / (8 * extract(epoch FROM max(finished_at) - min(started_at))))::bigint FROM executions"
                    + " WHERE owner = 'erin'") / 1000.0;
            long gapMs = Rows.on(api.pool()).single("SELECT (1000 * max(extract(epoch FROM s.started_at - f.finished_at)))::bigint"
                    + " FROM executions s, LATERAL (SELECT max(finished_at) AS finished_at FROM executions f"
                    + " WHERE f.owner = 'erin' AND f.lease_owner IS NULL AND f.finished_at <= s.started_at) f WHERE s.owner = 'erin'"
                    + " AND f.finished_at IS NOT NULL");
            System.out.printf("FAIR: a lone owner's 40 commands of 2 s on 8 slots: slots busy %.1f%% of the time;"
                    + " the longest wait of a run after the latest end before its start: %d ms%n", busy * 100, gapMs);
            assertThat(busy).as("share of slot time busy while erin's work waited").isGreaterThan(0.8);
        }
    }

    private static long count(Core core, String owner, String status) {
        return Rows.on(core.pool()).single("SELECT count(*) FROM executions WHERE owner = ? AND status = ?", owner, status);
    }

    /** Ends the backlog fast: queued rows cancelled in one statement, runs by their owner's cancel. */
    private static void cancelAll(Core core) throws Exception {
        Rows.on(core.pool()).update("UPDATE executions SET status = 'cancelled', finished_at = now(), error_code = 'cancelled'"
                + " WHERE status = 'queued'");
        try (java.sql.Connection c = core.pool().getConnection(); java.sql.Statement s = c.createStatement();
             java.sql.ResultSet rs = s.executeQuery("SELECT id, owner FROM executions WHERE status = 'running'")) {
            while (rs.next()) {
                core.service().cancel(rs.getObject(1, UUID.class), rs.getString(2));
            }
        }
    }
}
