package io.outrun.core.notify;

import io.outrun.core.store.NodesTable;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.StoreException;
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

    private static final NamedSql NOTIFY = NamedSql.of("SELECT pg_notify(:channel, :payload)");

    /** The payload of a wake-up sent to a node that looked free, which it relays when it is full. */
    public static final String WAKE_FREE = "free";

    private final DataSource dataSource;

    public Notifier(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** Wakes every node listening on {@code channel}. */
    public void notify(String channel, String payload) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = NOTIFY.prepare(c,
                NamedSql.Args.of("channel", channel, "payload", payload))) {
            ps.execute();
        } catch (SQLException e) {
            throw new StoreException("cannot notify " + channel, e);
        }
    }

    /**
     * Wakes at most {@code count} live nodes that had a free slot at their last heartbeat, chosen at
     * random, each on its own channel: new work wakes only as many nodes as it needs, never the
     * whole fleet into a claim. When fewer than {@code count} nodes had a free slot, every busy
     * node is told as well: it has no slot to claim into, but its next run's end looks for the
     * work (a busy node's run ends otherwise skip that look, see the worker's {@code ClaimLoop}).
     *
     * @return how many nodes were woken
     */
    public int wakeNodes(int count) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = NodesTable.WAKE_NODES.prepare(c, NamedSql.Args.of("count", count))) {
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
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = NodesTable.RELAY_WAKE.prepare(c,
                NamedSql.Args.of("own_channel", ownChannel))) {
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        } catch (SQLException e) {
            throw new StoreException("cannot relay a wake-up", e);
        }
    }
}
