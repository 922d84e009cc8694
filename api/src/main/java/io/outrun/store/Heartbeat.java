package io.outrun.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;

/**
 * A node's beat, in one statement on its own connection, whatever the number of runs: it says the
 * node is alive (its {@code nodes} row: slots, runs, draining), renews the leases of all its runs
 * (fenced on epoch, owner and not yet expired, so an expired lease is never revived), and takes or
 * keeps the fleet's sweep while no live node holds it. A lease renewal writes only the narrow
 * lease row, in place (HOT): no index, none of the execution's row.
 */
public final class Heartbeat {

    /** What a node says of itself at each beat. */
    public record NodeState(String incarnation, String nodeId, String version, String wakeChannel, int slots,
                            int running, boolean draining) {
    }

    /**
     * What a beat learnt: the leases still held, those asked to cancel, whether this node sweeps,
     * and whether someone asked it to drain ({@code outrun drain}).
     */
    public record Answer(Set<Lease> held, Set<Lease> cancelRequested, boolean sweeper, boolean drainRequested) {
    }

    private Heartbeat() {
    }

    /**
     * @param timeoutSeconds the statement is cancelled past this (the beat must answer or fail
     *                       well within the ttl)
     */
    public static Answer beat(Connection c, NodeState node, Duration ttl, Collection<Lease> leases, int timeoutSeconds)
            throws SQLException {
        String sql = "WITH node AS (INSERT INTO nodes (incarnation, node_id, version, wake_channel, slots, running, draining,"
                + "   lease_ttl_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (incarnation) DO UPDATE SET heartbeat_at = now(),"
                + "   slots = EXCLUDED.slots, running = EXCLUDED.running, lease_ttl_ms = EXCLUDED.lease_ttl_ms,"
                + "   draining = EXCLUDED.draining OR nodes.drain_requested RETURNING drain_requested),"
                + " renewed AS (UPDATE leases l SET expires_at = now() + ? * interval '1 millisecond', renewed_at = now()"
                + "   FROM unnest(?::uuid[], ?::int8[]) AS r(id, epoch)"
                + "   WHERE l.execution_id = r.id AND l.epoch = r.epoch AND l.owner = ? AND l.expires_at > now()"
                + "   RETURNING l.execution_id, l.epoch, l.cancel_requested),"
                + " sweep AS (UPDATE fleet_tasks SET holder = ?, held_until = now() + ? * interval '1 millisecond'"
                + "   WHERE name = 'sweep' AND (holder = ? OR held_until < now()) RETURNING 1)"
                + " SELECT 'L', execution_id, epoch, cancel_requested FROM renewed"
                + " UNION ALL SELECT 'S', NULL, NULL, NULL FROM sweep"
                + " UNION ALL SELECT 'N', NULL, NULL, drain_requested FROM node";
        Set<Lease> held = new HashSet<>();
        Set<Lease> cancel = new HashSet<>();
        boolean sweeper = false;
        boolean drain = false;
        java.util.Map<String, Lease> asked = new java.util.HashMap<>();
        leases.forEach(l -> asked.put(l.executionId() + "/" + l.epoch(), l));
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setQueryTimeout(timeoutSeconds);
            ps.setString(1, node.incarnation());
            ps.setString(2, node.nodeId());
            ps.setString(3, node.version());
            ps.setString(4, node.wakeChannel());
            ps.setInt(5, node.slots());
            ps.setInt(6, node.running());
            ps.setBoolean(7, node.draining());
            ps.setInt(8, (int) Math.min(Integer.MAX_VALUE, ttl.toMillis()));
            ps.setLong(9, ttl.toMillis());
            ps.setArray(10, c.createArrayOf("uuid", leases.stream().map(Lease::executionId).toArray()));
            ps.setArray(11, c.createArrayOf("int8", leases.stream().map(Lease::epoch).toArray()));
            ps.setString(12, node.incarnation());
            ps.setString(13, node.incarnation());
            ps.setLong(14, ttl.toMillis());
            ps.setString(15, node.incarnation());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    switch (rs.getString(1)) {
                        case "L" -> {
                            Lease lease = asked.get(rs.getObject(2, UUID.class) + "/" + rs.getLong(3));
                            if (lease != null) {
                                held.add(lease);
                                if (rs.getBoolean(4)) {
                                    cancel.add(lease);
                                }
                            }
                        }
                        case "S" -> sweeper = true;
                        case "N" -> drain = rs.getBoolean(4);
                        default -> { }
                    }
                }
            }
        }
        return new Answer(held, cancel, sweeper, drain);
    }

    /**
     * At a graceful stop: gives the sweep up, so another node takes it at its next beat, and
     * leaves the list of live nodes.
     */
    public static void resign(Connection c, String incarnation) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "WITH s AS (UPDATE fleet_tasks SET held_until = '-infinity' WHERE name = 'sweep' AND holder = ?)"
                        + " DELETE FROM nodes WHERE incarnation = ?")) {
            ps.setString(1, incarnation);
            ps.setString(2, incarnation);
            ps.executeUpdate();
        }
    }

    /** A live node as {@code outrun nodes} shows it. */
    /** A node that has not beaten for this long is gone (its leases have expired by then too). */
    public static final Duration LIVE_WITHIN = Duration.ofSeconds(30);

    public record LiveNode(String nodeId, String incarnation, String version, int slots, int running,
                           double heartbeatAgeSeconds, boolean draining) {
    }

    /**
     * Beaten within the given span, or within the node's own lease TTL when that is longer (V8):
     * a node with a long TTL beats seldom (every TTL/3) and is not gone between its beats.
     */
    private static final String BEAT_WITHIN =
            "heartbeat_at > now() - greatest(?, coalesce(lease_ttl_ms, 0)) * interval '1 millisecond'";

    /** Nodes that beat within the last {@code within} (or their own TTL): a dead node drops out once its beats stop. */
    public static java.util.List<LiveNode> live(Connection c, Duration within) throws SQLException {
        java.util.List<LiveNode> nodes = new java.util.ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT node_id, incarnation, version, slots, running,"
                + " extract(epoch FROM now() - heartbeat_at), draining OR drain_requested FROM nodes"
                + " WHERE " + BEAT_WITHIN + " ORDER BY node_id, started_at")) {
            ps.setLong(1, within.toMillis());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    nodes.add(new LiveNode(rs.getString(1), rs.getString(2), rs.getString(3), rs.getInt(4), rs.getInt(5),
                            rs.getDouble(6), rs.getBoolean(7)));
                }
            }
        }
        return nodes;
    }

    /** Asks live nodes named {@code node} (a node id or an incarnation) to drain; how many were asked. */
    public static int requestDrain(Connection c, String node, Duration within) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("UPDATE nodes SET drain_requested = true"
                + " WHERE (node_id = ? OR incarnation = ?) AND " + BEAT_WITHIN)) {
            ps.setString(1, node);
            ps.setString(2, node);
            ps.setLong(3, within.toMillis());
            return ps.executeUpdate();
        }
    }
}
