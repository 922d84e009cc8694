package io.outrun.core.store;

import io.outrun.testing.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which nodes count as live for the listing, drain and the leftover clean-up of other nodes'
 * warm pools. Review: a node with a long lease TTL beats every TTL/3 (40 s for 120 s), so with a
 * fixed 30 s window it vanished from {@code outrun nodes} between beats, a drain asked then found
 * no such node, and another node's clean-up took its warm pool for a dead node's.
 */
class HeartbeatLiveIT {

    @Test
    void aNodeIsLiveWithinItsOwnLeaseTtlWhenThatIsLongerThanTheWindow() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Connection c = DriverManager.getConnection(db.url(), db.user(), db.password());
             Statement st = c.createStatement()) {
            st.execute("INSERT INTO nodes (incarnation, node_id, version, wake_channel, slots, running, heartbeat_at, lease_ttl_ms)"
                    + " VALUES ('long/1', 'long', 'test', 'outrun_wake_l', 4, 0, now() - interval '50 seconds', 120000),"
                    + " ('short/1', 'short', 'test', 'outrun_wake_s', 4, 0, now() - interval '50 seconds', 8000),"
                    + " ('older/1', 'older', 'test', 'outrun_wake_o', 4, 0, now() - interval '50 seconds', NULL),"
                    + " ('fresh/1', 'fresh', 'test', 'outrun_wake_f', 4, 0, now(), 8000)");
            assertThat(Heartbeat.live(c, Duration.ofSeconds(30))).extracting(Heartbeat.LiveNode::nodeId)
                    .containsExactly("fresh", "long");
            assertThat(Heartbeat.requestDrain(c, "long", Duration.ofSeconds(30))).isEqualTo(1);
            assertThat(Heartbeat.requestDrain(c, "short", Duration.ofSeconds(30))).isZero();
        }
    }
}
