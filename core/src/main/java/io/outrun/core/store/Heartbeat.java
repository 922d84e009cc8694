package io.outrun.core.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
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
     * What a beat learnt: the leases it renewed (still this node's), those asked to cancel,
     * whether this node is the sweeper, and whether someone asked it to drain ({@code outrun drain}).
     */
    public record Answer(Set<Lease> renewed, Set<Lease> cancelRequested, boolean sweeper, boolean drainRequested) {
    }

    private Heartbeat() {
    }

    /**
     * @param timeoutSeconds the statement is cancelled past this (the beat must answer or fail
     *                       well within the ttl)
     */
    public static Answer beat(Connection c, NodeState node, Duration ttl, Collection<Lease> leases, int timeoutSeconds)
            throws SQLException {
        Set<Lease> renewed = new HashSet<>();
        Set<Lease> cancel = new HashSet<>();
        boolean sweeper = false;
        boolean drain = false;
        Map<String, Lease> asked = new HashMap<>();
        leases.forEach(l -> asked.put(l.executionId() + "/" + l.epoch(), l));
        NamedSql.Args args = NamedSql.Args.of("incarnation", node.incarnation(), "node_id", node.nodeId(),
                        "version", node.version())
                .and("wake_channel", node.wakeChannel())
                .and("slots", node.slots())
                .and("running", node.running())
                .and("draining", node.draining())
                .and("ttl_ms_int", (int) Math.min(Integer.MAX_VALUE, ttl.toMillis()))
                .and("ttl_ms", ttl.toMillis())
                .and("ids", c.createArrayOf("uuid", leases.stream().map(Lease::executionId).toArray()))
                .and("epochs", c.createArrayOf("int8", leases.stream().map(Lease::epoch).toArray()));
        try (PreparedStatement ps = NodesTable.BEAT.prepare(c, args)) {
            ps.setQueryTimeout(timeoutSeconds);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    switch (rs.getString(1)) {
                        case "L" -> {
                            Lease lease = asked.get(rs.getObject(2, UUID.class) + "/" + rs.getLong(3));
                            if (lease != null) {
                                renewed.add(lease);
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
        return new Answer(renewed, cancel, sweeper, drain);
    }

    /**
     * At a graceful stop: gives the sweep up, so another node takes it at its next beat, and
     * leaves the list of live nodes.
     */
    public static void resign(Connection c, String incarnation) throws SQLException {
        try (PreparedStatement ps = NodesTable.RESIGN.prepare(c, NamedSql.Args.of("incarnation", incarnation))) {
            ps.executeUpdate();
        }
    }

    /** A live node as {@code outrun nodes} shows it. */
    /** A node that has not beaten for this long is gone (its leases have expired by then too). */
    public static final Duration LIVE_WITHIN = Duration.ofSeconds(30);

    public record LiveNode(String nodeId, String incarnation, String version, int slots, int running,
                           double heartbeatAgeSeconds, boolean draining) {
    }

    /** Nodes that beat within the last {@code within} (or their own TTL): a dead node drops out once its beats stop. */
    public static List<LiveNode> live(Connection c, Duration within) throws SQLException {
        List<LiveNode> nodes = new ArrayList<>();
        try (PreparedStatement ps = NodesTable.LIVE.prepare(c, NamedSql.Args.of("within_ms", within.toMillis()))) {
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
        try (PreparedStatement ps = NodesTable.REQUEST_DRAIN.prepare(c, NamedSql.Args.of("node", node, "within_ms", within.toMillis()))) {
            return ps.executeUpdate();
        }
    }
}
