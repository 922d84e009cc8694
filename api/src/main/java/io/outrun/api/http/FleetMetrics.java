package io.outrun.api.http;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.store.ExecutionsTable;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.StoreException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.EnumMap;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fleet's state for Prometheus, read from the database every node shares, so any API node
 * answers for the whole fleet: executions queued and running, leases expired but not yet
 * re-driven (non-zero for long means no node is sweeping), the age of the oldest queued
 * execution (the queue's latency), and executions that ended in the last five minutes by status.
 * One query (on the partial and finish-time indexes) refreshes all of them at most every 5 s,
 * however often it is scraped.
 */
public final class FleetMetrics {

    private static final long REFRESH_NANOS = 5_000_000_000L;
    private static final Logger LOG = LoggerFactory.getLogger(FleetMetrics.class);

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final DataSource dataSource;
    private Snapshot snapshot = Snapshot.EMPTY;
    private long readAt = Long.MIN_VALUE;

    public FleetMetrics(DataSource dataSource) {
        this.dataSource = dataSource;
        gauge("outrun.executions", "Executions now in this state", s -> s.queued, "status", "queued");
        gauge("outrun.executions", "Executions now in this state", s -> s.running, "status", "running");
        gauge("outrun.leases.expired", "Running executions whose lease expired and that wait for the re-drive sweep",
                s -> s.expired);
        gauge("outrun.queue.oldest.seconds", "Age of the oldest queued execution", s -> s.oldestQueuedSeconds);
        for (ExecutionStatus status : ExecutionStatus.values()) {
            if (status.isTerminal()) {
                gauge("outrun.executions.ended.5m", "Executions that ended in the last 5 minutes",
                        s -> s.ended.getOrDefault(status, 0L), "status", status.wire());
            }
        }
    }

    /** The Prometheus text exposition of every meter. */
    public String scrape() {
        return registry.scrape();
    }

    private void gauge(String name, String help, ToDoubleFunction<Snapshot> value, String... tags) {
        Gauge.builder(name, this, m -> value.applyAsDouble(m.current())).description(help).tags(tags).register(registry);
    }

    private synchronized Snapshot current() {
        long now = System.nanoTime();
        if (readAt == Long.MIN_VALUE || now - readAt > REFRESH_NANOS) {
            readAt = now;
            try {
                snapshot = read();
            } catch (StoreException e) {
                // A scrape must not fail because the database hiccups: /health tells that story.
                LOG.warn("fleet metrics not refreshed: {}", e.getMessage());
            }
        }
        return snapshot;
    }

    private Snapshot read() {
        try (Connection c = dataSource.getConnection()) {
            Map<ExecutionStatus, Long> endedByStatus = new EnumMap<>(ExecutionStatus.class);
            try (PreparedStatement ps = ExecutionsTable.FLEET_ENDED.prepare(c, NamedSql.Args.of()); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    endedByStatus.put(ExecutionStatus.fromWire(rs.getString(1)), rs.getLong(2));
                }
            }
            try (PreparedStatement ps = ExecutionsTable.FLEET_NOW.prepare(c, NamedSql.Args.of()); ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Snapshot(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getDouble(4), endedByStatus);
            }
        } catch (SQLException e) {
            throw new StoreException("cannot read fleet metrics", e);
        }
    }

    private record Snapshot(long queued, long running, long expired, double oldestQueuedSeconds,
                            Map<ExecutionStatus, Long> ended) {
        static final Snapshot EMPTY = new Snapshot(0, 0, 0, 0, Map.of());
    }
}
