package io.outrun.core.notify;

import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which nodes a wake-up reaches. Nodes here are rows of {@code nodes}, each with a LISTEN
 * connection of its own; no worker runs, so nothing else sends on their channels.
 */
class NotifierIT {

    /**
     * Review (bench/run recovery 15.5 s where it had been 10 s): a SIGKILLed node's row still said
     * it had free slots for a minute, so about one wake-up in N went to a dead node and its work
     * waited for JobRunr's poll. A node silent for longer than its own lease TTL is not woken.
     */
    @Test
    void aNodeSilentForLongerThanItsLeaseTtlIsNeverWoken() throws Exception {
        DatabaseConfig db = TestDatabase.fresh(DatabaseConfig::new);
        try (Core api = Core.open(db, "api");
             Connection dead = listen(db, "outrun_wake_n_dead"); Connection live = listen(db, "outrun_wake_n_live");
             Connection older = listen(db, "outrun_wake_n_older")) {
            Notifier notifier = new Notifier(api.pool());
            // Silent for 20 s with a TTL of 8 s: its leases are gone, and so is it.
            node(api, "n-dead", "outrun_wake_n_dead", "now() - interval '20 seconds'", "8000");
            node(api, "n-live", "outrun_wake_n_live", "now()", "8000");
            // A node of a version that does not say its TTL: live for a minute after its beat, as before.
            node(api, "n-older", "outrun_wake_n_older", "now() - interval '20 seconds'", "NULL");
            for (int i = 0; i < 10; i++) {
                assertThat(notifier.wakeNodes(1)).isEqualTo(1);
            }
            List<String> toLive = payloads(live, 1000);
            List<String> toOlder = payloads(older, 200);
            assertThat(payloads(dead, 200)).as("wake-ups sent to the dead node").isEmpty();
            assertThat(toLive.size() + toOlder.size()).as("each wake-up reached one live node").isEqualTo(10);

            assertThat(notifier.relayWake("outrun_wake_n_live")).isEqualTo(1);
            assertThat(payloads(older, 1000)).containsExactly("relay");
            assertThat(payloads(dead, 200)).isEmpty();

            // No free node: every busy one is told, never the dead one.
            sql(api, "UPDATE nodes SET running = slots");
            assertThat(notifier.wakeNodes(1)).isEqualTo(2);
            assertThat(payloads(live, 1000)).containsExactly("busy");
            assertThat(payloads(older, 1000)).containsExactly("busy");
            assertThat(payloads(dead, 200)).isEmpty();
        }
    }

    /** A batch's one wake-up reaches as many free nodes as it made executions, not one. */
    @Test
    void aBatchWakesAsManyFreeNodesAsItHasNewExecutions() throws Exception {
        DatabaseConfig db = TestDatabase.fresh(DatabaseConfig::new);
        try (Core api = Core.open(db, "api");
             Connection a = listen(db, "outrun_wake_n_a"); Connection b = listen(db, "outrun_wake_n_b");
             Connection c = listen(db, "outrun_wake_n_c");
             Wakes wakes = new Wakes(new Notifier(api.pool()))) {
            node(api, "n-a", "outrun_wake_n_a", "now()", "8000");
            node(api, "n-b", "outrun_wake_n_b", "now()", "8000");
            node(api, "n-c", "outrun_wake_n_c", "now()", "8000");
            wakes.wake(3);
            assertThat(payloads(a, 1000)).hasSize(1);
            assertThat(payloads(b, 200)).hasSize(1);
            assertThat(payloads(c, 200)).hasSize(1);
            wakes.wake(0); // a batch that made nothing wakes nobody
            assertThat(payloads(a, 300).size() + payloads(b, 100).size() + payloads(c, 100).size()).isZero();
        }
    }

    /**
     * Review: a submit wakes nodes after its row is committed; a wake-up while the node stops
     * (its waker closed) threw, so a stored execution was answered as an error and resubmitted.
     */
    @Test
    void aSubmitWhileTheWakerStopsIsStillAnsweredStored() {
        DatabaseConfig db = TestDatabase.fresh(DatabaseConfig::new);
        try (Core api = Core.open(db, "api")) {
            api.wakes().close();
            assertThat(api.service().submit(io.outrun.core.execution.Submission.of("w", "true")).created()).isTrue();
            api.wakes().wake(3);
        }
    }

    private static void node(Core api, String id, String channel, String beat, String ttlMs) throws SQLException {
        sql(api, "INSERT INTO nodes (incarnation, node_id, version, wake_channel, slots, running, heartbeat_at, lease_ttl_ms)"
                + " VALUES ('" + id + "', '" + id + "', 'test', '" + channel + "', 4, 0, " + beat + ", " + ttlMs + ")");
    }

    private static void sql(Core api, String sql) throws SQLException {
        try (Connection c = api.pool().getConnection(); Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    private static Connection listen(DatabaseConfig db, String channel) throws SQLException {
        Connection c = DriverManager.getConnection(db.url(), db.user(), db.password());
        try (Statement st = c.createStatement()) {
            st.execute("LISTEN " + channel);
        }
        return c;
    }

    /** What arrived on this connection within {@code waitMs}. */
    private static List<String> payloads(Connection c, int waitMs) throws SQLException {
        List<String> got = new ArrayList<>();
        long end = System.nanoTime() + waitMs * 1_000_000L;
        long left;
        while ((left = (end - System.nanoTime()) / 1_000_000) > 0) {
            PGNotification[] batch = c.unwrap(PGConnection.class).getNotifications((int) left);
            if (batch != null) {
                for (PGNotification n : batch) {
                    got.add(n.getParameter());
                }
            }
        }
        return got;
    }
}
