package io.outrun.notify;

import io.outrun.store.StoreException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * The sending side of PostgreSQL NOTIFY, next to the {@link Listener} that receives it: sent on a
 * pooled connection, outside any transaction, because a notification is a hint that only saves
 * latency (every listener has a slower fallback) and must never hold up the write it follows.
 */
public final class Notifier {

    /** Every other live node, on its own channel: see {@link #relayWake}. */
    private static final String RELAY_WAKE = """
            SELECT count(pg_notify(wake_channel, 'relay')) FROM nodes
              WHERE heartbeat_at > now() - interval '1 minute' AND NOT draining AND wake_channel <> ?""";

    /** The payload of a wake-up sent to a node that looked free, which it relays when it is full. */
    public static final String WAKE_FREE = "free";

    private final DataSource dataSource;

    public Notifier(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** Wakes every node listening on {@code channel}. */
    public void notify(String channel, String payload) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT pg_notify(?, ?)")) {
            ps.setString(1, channel);
            ps.setString(2, payload);
            ps.execute();
        } catch (SQLException e) {
            throw new StoreException("cannot notify " + channel, e);
        }
    }

    /**
     * Passes a wake-up on: a node woken as free (its last heartbeat said so) that is full by now
     * tells every other live node, busy or not, so that the work is not left to its own next
     * run's end. A relayed wake-up is never relayed again.
     */
    public int relayWake(String ownChannel) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(RELAY_WAKE)) {
            ps.setString(1, ownChannel);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        } catch (SQLException e) {
            throw new StoreException("cannot relay a wake-up", e);
        }
    }
}
