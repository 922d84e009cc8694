package io.outrun.store;

/**
 * The SQL that wakes nodes for new work, shared by the statements that make work (a submission's
 * insert sends its wake-up itself, at its commit) and the {@code Notifier} (re-drives, relays).
 */
public final class Wakes {

    /**
     * Nodes that may be woken: not draining, and beaten within their own lease TTL (V8; a minute
     * for a node that does not say its TTL). A node silent for longer has lost every lease it
     * held: dead or cut off, and a wake-up sent to it would leave the work to the fallback poll.
     */
    public static final String LIVE =
            "NOT draining AND heartbeat_at > now() - coalesce(lease_ttl_ms, 60000) * interval '1 millisecond'";

    private Wakes() {
    }

    /**
     * A query of one row and one column, the number of nodes woken for {@code count} (an SQL
     * expression, used twice) new executions: that many live nodes with a free slot at their last
     * heartbeat, chosen at random, each on its own channel (payload {@code free}); when fewer had
     * a free slot, every busy live node too ({@code busy}: it looks when its next slot frees).
     * Never the whole fleet into a claim for one execution.
     */
    public static String nodes(String count) {
        return """
                WITH live AS (SELECT wake_channel, running < slots AS free FROM nodes WHERE %1$s),
                  free AS (SELECT wake_channel FROM live WHERE free ORDER BY random() LIMIT %2$s),
                  busy AS (SELECT wake_channel FROM live WHERE NOT free AND (SELECT count(*) FROM free) < %2$s)
                SELECT count(pg_notify(n.wake_channel, n.why)) FROM (SELECT wake_channel, 'free' AS why FROM free
                  UNION ALL SELECT wake_channel, 'busy' FROM busy) n""".formatted(LIVE, count);
    }
}
