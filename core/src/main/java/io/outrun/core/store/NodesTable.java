package io.outrun.core.store;

/**
 * The {@code nodes} table's statements: a node's beat (which also renews its leases and takes the
 * sweep), its leaving, the live list, a drain request ({@link Heartbeat}), and the wake-ups sent
 * to live nodes ({@code core.notify.Notifier}). Statements only; see {@link ExecutionsTable} and
 * CONTRIBUTING.md ("SQL") for the rule.
 */
public final class NodesTable {

    public static final NamedSql BEAT = NamedSql.of("""
            WITH node AS (INSERT INTO nodes (incarnation, node_id, version, wake_channel, slots, running, draining,
                lease_ttl_ms) VALUES (:incarnation, :node_id, :version, :wake_channel, :slots, :running, :draining,
                :ttl_ms_int)
              ON CONFLICT (incarnation) DO UPDATE SET heartbeat_at = now(),
                slots = EXCLUDED.slots, running = EXCLUDED.running, lease_ttl_ms = EXCLUDED.lease_ttl_ms,
                draining = EXCLUDED.draining OR nodes.drain_requested RETURNING drain_requested),
            renewed AS (UPDATE leases l SET expires_at = now() + :ttl_ms * interval '1 millisecond', renewed_at = now()
                FROM unnest(:ids::uuid[], :epochs::int8[]) AS r(id, epoch)
                WHERE l.execution_id = r.id AND l.epoch = r.epoch AND l.owner = :incarnation AND l.expires_at > now()
                RETURNING l.execution_id, l.epoch, l.cancel_requested),
            sweep AS (UPDATE fleet_tasks SET holder = :incarnation, held_until = now() + :ttl_ms * interval '1 millisecond'
                WHERE name = 'sweep' AND (holder = :incarnation OR held_until < now()) RETURNING 1)
            SELECT 'L', execution_id, epoch, cancel_requested FROM renewed
            UNION ALL SELECT 'S', NULL, NULL, NULL FROM sweep
            UNION ALL SELECT 'N', NULL, NULL, drain_requested FROM node""");

    public static final NamedSql RESIGN = NamedSql.of("""
            WITH s AS (UPDATE fleet_tasks SET held_until = '-infinity' WHERE name = 'sweep' AND holder = :incarnation)
            DELETE FROM nodes WHERE incarnation = :incarnation""");

    /**
     * Beaten within the given span, or within the node's own lease TTL when that is longer (V8):
     * a node with a long TTL beats seldom (every TTL/3) and is not gone between its beats.
     */
    public static final NamedSql LIVE = NamedSql.of("""
            SELECT node_id, incarnation, version, slots, running,
                   extract(epoch FROM now() - heartbeat_at), draining OR drain_requested
              FROM nodes
             WHERE heartbeat_at > now() - greatest(:within_ms, coalesce(lease_ttl_ms, 0)) * interval '1 millisecond'
             ORDER BY node_id, started_at""");

    /** Beaten within, as {@link NodesTable#LIVE} says. */
    public static final NamedSql REQUEST_DRAIN = NamedSql.of("""
            UPDATE nodes SET drain_requested = true
             WHERE (node_id = :node OR incarnation = :node)
               AND heartbeat_at > now() - greatest(:within_ms, coalesce(lease_ttl_ms, 0)) * interval '1 millisecond'""");

    /**
     * Nodes that may be woken ({@code live} below, written out in each statement): not draining,
     * and beaten within their own lease TTL (V8; a minute for a node that does not say its TTL).
     * A node silent for longer has lost every lease it held: dead or cut off, and a wake-up sent
     * to it would leave the work to the fallback poll.
     */
    public static final NamedSql WAKE_NODES = NamedSql.of("""
            WITH live AS (SELECT wake_channel, running < slots AS free FROM nodes
                 WHERE NOT draining AND heartbeat_at > now() - coalesce(lease_ttl_ms, 60000) * interval '1 millisecond'),
              free AS (SELECT wake_channel FROM live WHERE free ORDER BY random() LIMIT :count),
              -- Too few free slots: the busy nodes are told too, so that whichever run ends first
              -- looks for the rest (see ClaimLoop); they run no query for it.
              busy AS (SELECT wake_channel FROM live WHERE NOT free AND (SELECT count(*) FROM free) < :count)
            SELECT count(pg_notify(n.wake_channel, n.why)) FROM (SELECT wake_channel, 'free' AS why FROM free
              UNION ALL SELECT wake_channel, 'busy' FROM busy) n""");

    /** Every other live node (as in {@link NodesTable#WAKE_NODES}), on its own channel: see {@link #relayWake}. */
    public static final NamedSql RELAY_WAKE = NamedSql.of("""
            SELECT count(pg_notify(wake_channel, 'relay')) FROM nodes
              WHERE NOT draining AND heartbeat_at > now() - coalesce(lease_ttl_ms, 60000) * interval '1 millisecond'
                AND wake_channel <> :own_channel""");

    private NodesTable() {
    }
}
