package io.outrun.worker;

import io.outrun.config.ConfigException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * How one worker node behaves. Validated once at construction; a bad value names its option.
 *
 * @param nodeId              this node's name in leases and container labels ({@code --node-id})
 * @param slots               executions run at once ({@code --slots}, default 4)
 * @param leaseTtl            how long a lease lives without renewal ({@code --lease-ttl-ms}, default 8 s);
 *                            renewed every ttl/3, so a dead node's work is free again within ttl
 * @param outputFlush         how often new output is written for live readers (default 1 s)
 * @param sweepInterval       how often this node tries the fleet's re-drive sweep (default 2 s; one node at a time sweeps)
 * @param pollInterval        JobRunr's poll interval (default 5 s, its floor on SQL storage); new
 *                            work does not wait for it (LISTEN/NOTIFY wakes the node)
 * @param lostDispatchGrace   a queued row without a live JobRunr job for this long is dispatched again (default 15 s)
 * @param cleanupInterval     how often leftover containers are removed (default 30 s)
 * @param dashboardPort       JobRunr dashboard port, or 0 for none
 * @param metricsPort         port of this node's Prometheus {@code /metrics}, or 0 for none
 * @param leaseDir            where runs' lease files live (their kill switch); the Docker engine
 *                            must see the same path ({@code --lease-dir}, default {@code /tmp/outrun-leases})
 */
public record WorkerConfig(
        String nodeId,
        int slots,
        Duration leaseTtl,
        Duration outputFlush,
        Duration sweepInterval,
        Duration pollInterval,
        Duration lostDispatchGrace,
        Duration cleanupInterval,
        int dashboardPort,
        int metricsPort,
        Path leaseDir) {

    public WorkerConfig {
        if (nodeId == null || !nodeId.matches("[A-Za-z0-9._-]{1,64}")) {
            throw new ConfigException("--node-id must be 1-64 characters of A-Z a-z 0-9 . _ -, got: " + nodeId);
        }
        if (slots < 1 || slots > 256) {
            throw new ConfigException("--slots must be between 1 and 256, got: " + slots);
        }
        if (leaseTtl.compareTo(Duration.ofSeconds(3)) < 0 || leaseTtl.compareTo(Duration.ofMinutes(10)) > 0) {
            throw new ConfigException("--lease-ttl-ms must be between 3 s and 10 min, got: " + leaseTtl);
        }
        if (outputFlush.compareTo(Duration.ofMillis(100)) < 0 || outputFlush.compareTo(leaseTtl) > 0) {
            throw new ConfigException("the output flush interval must be between 100 ms and the lease ttl, got: " + outputFlush);
        }
        if (sweepInterval.compareTo(Duration.ofMillis(500)) < 0) {
            throw new ConfigException("--sweep-interval-ms must be at least 500 ms, got: " + sweepInterval);
        }
        if (pollInterval.compareTo(Duration.ofSeconds(5)) < 0) {
            throw new ConfigException("--poll-interval-s must be at least 5 s (JobRunr's floor on SQL storage), got: " + pollInterval);
        }
        if (lostDispatchGrace.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new ConfigException("--lost-dispatch-grace-s must be at least 1 s, got: " + lostDispatchGrace);
        }
        if (dashboardPort < 0 || dashboardPort > 65535) {
            throw new ConfigException("--dashboard-port must be 0 (off) or a TCP port, got: " + dashboardPort);
        }
        if (metricsPort < 0 || metricsPort > 65535) {
            throw new ConfigException("--metrics-port must be 0 (off) or a TCP port, got: " + metricsPort);
        }
        if (cleanupInterval.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new ConfigException("--cleanup-interval-s must be at least 1 s, got: " + cleanupInterval);
        }
        if (leaseDir == null || !leaseDir.isAbsolute()) {
            throw new ConfigException("--lease-dir must be an absolute path, got: " + leaseDir);
        }
    }

    /** The defaults, for a node named {@code nodeId}. */
    public static WorkerConfig defaults(String nodeId) {
        return new WorkerConfig(nodeId, 4, Duration.ofSeconds(8), Duration.ofSeconds(1), Duration.ofSeconds(2),
                Duration.ofSeconds(5), Duration.ofSeconds(15), Duration.ofSeconds(30), 0, 0, DEFAULT_LEASE_DIR);
    }

    public static final Path DEFAULT_LEASE_DIR = Path.of("/tmp/outrun-leases");

    public Duration heartbeat() {
        return leaseTtl.dividedBy(3);
    }

    public WorkerConfig withSlots(int value) {
        return new WorkerConfig(nodeId, value, leaseTtl, outputFlush, sweepInterval, pollInterval, lostDispatchGrace, cleanupInterval, dashboardPort, metricsPort, leaseDir);
    }

    public WorkerConfig withPollInterval(Duration value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, value, lostDispatchGrace, cleanupInterval, dashboardPort, metricsPort, leaseDir);
    }

    public WorkerConfig withLeaseTtl(Duration value) {
        return new WorkerConfig(nodeId, slots, value, outputFlush, sweepInterval, pollInterval, lostDispatchGrace, cleanupInterval, dashboardPort, metricsPort, leaseDir);
    }

    public WorkerConfig withDashboardPort(int value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, lostDispatchGrace, cleanupInterval, value, metricsPort, leaseDir);
    }

    public WorkerConfig withMetricsPort(int value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, lostDispatchGrace, cleanupInterval, dashboardPort, value, leaseDir);
    }

    public WorkerConfig withLeaseDir(Path value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, lostDispatchGrace, cleanupInterval, dashboardPort, metricsPort, value);
    }

    public WorkerConfig withLostDispatchGrace(Duration value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, value, cleanupInterval, dashboardPort, metricsPort, leaseDir);
    }
}
