package io.outrun.notify;

import io.outrun.store.NamedSql;
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

    /**
     * Nodes that may be woken ({@code live} below, written out in each statement): not draining,
     * and beaten within their own lease TTL (V8; a minute for a node that does not say its TTL).
     * A node silent for longer has lost every lease it held: dead or cut off, and a wake-up sent
     * to it would leave the work to the fallback poll.
     */
    private static final NamedSql WAKE_NODES = NamedSql.of("""
            WITH live AS (SELECT wake_channel, running < slots AS free FROM nodes
                 WHERE NOT draining AND heartbeat_at > now() - coalesce(lease_ttl_ms, 60000) * interval '1 millisecond'),
              free AS (SELECT wake_channel FROM live WHERE free ORDER BY random() LIMIT :count),
              -- Too few free slots: the busy nodes are told too, so that whichever run ends first
              -- looks for the rest (see ClaimLoop); they run no query for it.
              busy AS (SELECT wake_channel FROM live WHERE NOT free AND (SELECT count(*) FROM free) < :count)
            SELECT count(pg_notify(n.wake_channel, n.why)) FROM (SELECT wake_channel, 'free' AS why FROM free
              UNION ALL SELECT wake_channel, 'busy' FROM busy) n""");

    /** Every other live node (as in {@link #WAKE_NODES}), on its own channel: see {@link #relayWake}. */
    private static final NamedSql RELAY_WAKE = NamedSql.of("""
            SELECT count(pg_notify(wake_channel, 'relay')) FROM nodes
              WHERE NOT draining AND heartbeat_at > now() - coalesce(lease_ttl_ms, 60000) * interval '1 millisecond'
                AND wake_channel <> :own_channel""");

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
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = WAKE_NODES.prepare(c, NamedSql.Args.of("count", count))) {
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
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = RELAY_WAKE.prepare(c,
                NamedSql.Args.of("own_channel", ownChannel))) {
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        } catch (SQLException e) {
            throw new StoreException("cannot relay a wake-up", e);
        }
    }
}
