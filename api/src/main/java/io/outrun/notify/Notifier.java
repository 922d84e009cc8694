package io.outrun.notify;

import io.outrun.store.StoreException;
import io.outrun.store.Wakes;
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

    private static final String WAKE_NODES = Wakes.nodes("?");

    /** Every other live node, on its own channel: see {@link #relayWake}. */
    private static final String RELAY_WAKE = """
            SELECT count(pg_notify(wake_channel, 'relay')) FROM nodes
              WHERE %s AND wake_channel <> ?""".formatted(Wakes.LIVE);

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
     * Wakes nodes for {@code count} new executions (see {@link Wakes#nodes}): at most that many
     * live nodes that had a free slot at their last heartbeat, each on its own channel; when
     * fewer had one, every busy node is told as well, and looks when its next slot frees.
     *
     * @return how many nodes were woken
     */
    public int wakeNodes(int count) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(WAKE_NODES)) {
            ps.setInt(1, count);
            ps.setInt(2, count);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        } catch (SQLException e) {
            throw new StoreException("cannot wake nodes", e);
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
