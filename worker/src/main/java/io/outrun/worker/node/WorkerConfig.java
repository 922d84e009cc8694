package io.outrun.worker.node;

import io.outrun.core.config.ConfigException;
import io.outrun.core.identity.Issuer;
import io.outrun.core.secrets.SecretsKey;
import io.outrun.model.egress.EgressPolicy;
import io.outrun.sandbox.Limits;
import java.nio.file.Path;
import java.time.Duration;

/**
 * How one worker node behaves. Validated once at construction, so a node never starts half-way on
 * a bad value; an error names the option to change. Each default is one constant below, used by
 * the {@code outrun worker} options too.
 *
 * @param nodeId              this node's name in leases and container labels ({@code --node-id})
 * @param slots               executions run at once ({@code --slots}, default {@value #DEFAULT_SLOTS})
 * @param leaseTtl            how long a lease lives without renewal ({@code --lease-ttl-ms}, default
 *                            {@value #DEFAULT_LEASE_TTL_MS} ms); renewed every ttl/3, so a dead node's work is free again within ttl
 * @param outputFlush         how often new output is written for live readers (no option; default {@value #DEFAULT_OUTPUT_FLUSH_MS} ms)
 * @param sweepInterval       how often this node tries the fleet's re-drive sweep ({@code --sweep-interval-ms}, default
 *                            {@value #DEFAULT_SWEEP_INTERVAL_MS} ms; one node at a time sweeps)
 * @param pollInterval        how often an idle claim loop looks for work without being woken ({@code --poll-interval-s},
 *                            default {@value #DEFAULT_POLL_INTERVAL_S} s): new work does not wait for it (a NOTIFY wakes
 *                            the node); it finds what a lost wake-up left, and hand-backs whose pause ended
 * @param cleanupInterval     how often leftover containers are removed ({@code --cleanup-interval-s}, default
 *                            {@value #DEFAULT_CLEANUP_INTERVAL_S} s)
 * @param dashboardPort       JobRunr dashboard port, or 0 for none ({@code --dashboard-port})
 * @param metricsPort         port of this node's Prometheus {@code /metrics}, or 0 for none ({@code --metrics-port})
 * @param leaseDir            where runs' lease files live (their kill switch); the Docker engine
 *                            must see the same path ({@code --lease-dir}, default {@value #DEFAULT_LEASE_DIR_TEXT})
 * @param limits              resources of each run ({@code --memory-mb}, {@code --cpus}, {@code --pids}, {@code --tmpfs-mb},
 *                            {@code --network})
 * @param dashboardAccess     who may open the dashboard; a dashboard port needs credentials or {@code --dashboard-no-auth}
 * @param egress              hosts runs that asked for {@code "network": "egress"} may reach through this node's proxy
 *                            ({@code --egress-allow}; empty: such runs reach nothing)
 * @param secretsKey          opens the secrets runs name ({@code --secrets-key-file}, {@code OUTRUN_SECRETS_KEY}; the
 *                            API's key); null: a run naming a secret fails with {@code secret_unavailable}
 * @param webhooks            where completion webhooks may be sent ({@code --webhook-allow}; empty: submissions
 *                            with a webhook are refused)
 * @param apiUrl              where this node reaches Outrun's API for its runs ({@code --api-url}): its bridge
 *                            forwards there, and host-process runs get it as {@code OUTRUN_API}; null: runs
 *                            cannot reach the API
 * @param publicUrl           the API's public URL, the issuer of run tokens ({@code --public-url}; null: the
 *                            {@code apiUrl}); neither: this node signs no token
 */
public record WorkerConfig(
        String nodeId,
        int slots,
        Duration leaseTtl,
        Duration outputFlush,
        Duration sweepInterval,
        Duration pollInterval,
        Duration cleanupInterval,
        int dashboardPort,
        int metricsPort,
        Path leaseDir,
        Limits limits,
        DashboardAccess dashboardAccess,
        EgressPolicy egress,
        SecretsKey secretsKey,
        EgressPolicy webhooks,
        String apiUrl,
        String publicUrl) {

    public WorkerConfig(String nodeId, int slots, Duration leaseTtl, Duration outputFlush, Duration sweepInterval,
                        Duration pollInterval, Duration cleanupInterval, int dashboardPort, int metricsPort, Path leaseDir,
                        Limits limits, DashboardAccess dashboardAccess, EgressPolicy egress) {
        this(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, cleanupInterval, dashboardPort, metricsPort,
                leaseDir, limits, dashboardAccess, egress, null, null, null, null);
    }

    public static final int DEFAULT_SLOTS = 4;
    public static final long DEFAULT_LEASE_TTL_MS = 8_000;
    public static final long DEFAULT_OUTPUT_FLUSH_MS = 1_000;
    public static final long DEFAULT_SWEEP_INTERVAL_MS = 2_000;
    public static final int DEFAULT_POLL_INTERVAL_S = 5;
    public static final int DEFAULT_CLEANUP_INTERVAL_S = 30;
    public static final String DEFAULT_LEASE_DIR_TEXT = "/tmp/outrun-leases";
    public static final Path DEFAULT_LEASE_DIR = Path.of(DEFAULT_LEASE_DIR_TEXT);

    public WorkerConfig {
        egress = egress == null ? EgressPolicy.NONE : egress;
        webhooks = webhooks == null ? EgressPolicy.NONE_WEBHOOKS : webhooks;
        if (nodeId == null || !nodeId.matches("[A-Za-z0-9._-]{1,64}")) {
            throw new ConfigException("--node-id must be 1-64 characters of A-Z a-z 0-9 . _ -, got: " + nodeId);
        }
        if (slots < 1 || slots > 256) {
            throw new ConfigException("--slots must be between 1 and 256, got: " + slots);
        }
        required(leaseTtl, "--lease-ttl-ms");
        if (leaseTtl.compareTo(Duration.ofSeconds(3)) < 0 || leaseTtl.compareTo(Duration.ofMinutes(10)) > 0) {
            throw new ConfigException("--lease-ttl-ms must be between 3 s and 10 min, got: " + leaseTtl);
        }
        required(outputFlush, "the output flush interval");
        if (outputFlush.compareTo(Duration.ofMillis(100)) < 0 || outputFlush.compareTo(leaseTtl) > 0) {
            throw new ConfigException("the output flush interval must be between 100 ms and the lease ttl, got: " + outputFlush);
        }
        required(sweepInterval, "--sweep-interval-ms");
        if (sweepInterval.compareTo(Duration.ofMillis(500)) < 0) {
            throw new ConfigException("--sweep-interval-ms must be at least 500 ms, got: " + sweepInterval);
        }
        required(pollInterval, "--poll-interval-s");
        if (pollInterval.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new ConfigException("--poll-interval-s must be at least 1 s, got: " + pollInterval);
        }
        if (dashboardPort < 0 || dashboardPort > 65535) {
            throw new ConfigException("--dashboard-port must be 0 (off) or a TCP port, got: " + dashboardPort);
        }
        if (metricsPort < 0 || metricsPort > 65535) {
            throw new ConfigException("--metrics-port must be 0 (off) or a TCP port, got: " + metricsPort);
        }
        required(cleanupInterval, "--cleanup-interval-s");
        if (cleanupInterval.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new ConfigException("--cleanup-interval-s must be at least 1 s, got: " + cleanupInterval);
        }
        if (leaseDir == null || !leaseDir.isAbsolute()) {
            throw new ConfigException("--lease-dir must be an absolute path, got: " + leaseDir);
        }
        if (limits == null) {
            limits = Limits.DEFAULTS;
        }
        if (dashboardAccess == null) {
            dashboardAccess = DashboardAccess.NONE;
        }
        apiUrl = apiUrl == null || apiUrl.isBlank() ? null : Issuer.normalize(apiUrl, "--api-url");
        publicUrl = publicUrl == null || publicUrl.isBlank() ? null : Issuer.normalize(publicUrl);
        if (dashboardPort > 0 && !dashboardAccess.allowsServing()) {
            throw new ConfigException("--dashboard-port " + dashboardPort + " needs --dashboard-user and --dashboard-password"
                    + " (or OUTRUN_DASHBOARD_USER, OUTRUN_DASHBOARD_PASSWORD): the dashboard shows every command and can"
                    + " delete jobs; add --dashboard-no-auth to serve it without a password on purpose");
        }
    }

    /** The defaults, for a node named {@code nodeId}. */
    public static WorkerConfig defaults(String nodeId) {
        return new WorkerConfig(nodeId, DEFAULT_SLOTS, Duration.ofMillis(DEFAULT_LEASE_TTL_MS),
                Duration.ofMillis(DEFAULT_OUTPUT_FLUSH_MS), Duration.ofMillis(DEFAULT_SWEEP_INTERVAL_MS),
                Duration.ofSeconds(DEFAULT_POLL_INTERVAL_S),
                Duration.ofSeconds(DEFAULT_CLEANUP_INTERVAL_S), 0, 0, DEFAULT_LEASE_DIR, Limits.DEFAULTS, DashboardAccess.NONE, null, null, null, null, null);
    }

    public Duration heartbeat() {
        return leaseTtl.dividedBy(3);
    }

    public WorkerConfig withSlots(int value) {
        return new WorkerConfig(nodeId, value, leaseTtl, outputFlush, sweepInterval, pollInterval, cleanupInterval, dashboardPort, metricsPort, leaseDir, limits, dashboardAccess, egress, secretsKey, webhooks, apiUrl, publicUrl);
    }

    public WorkerConfig withPollInterval(Duration value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, value, cleanupInterval, dashboardPort, metricsPort, leaseDir, limits, dashboardAccess, egress, secretsKey, webhooks, apiUrl, publicUrl);
    }

    public WorkerConfig withLeaseTtl(Duration value) {
        return new WorkerConfig(nodeId, slots, value, outputFlush, sweepInterval, pollInterval, cleanupInterval, dashboardPort, metricsPort, leaseDir, limits, dashboardAccess, egress, secretsKey, webhooks, apiUrl, publicUrl);
    }

    /** A dashboard on {@code port} (0: none), opened to {@code access}. */
    public WorkerConfig withDashboard(int port, DashboardAccess access) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, cleanupInterval, port, metricsPort, leaseDir, limits, access, egress, secretsKey, webhooks, apiUrl, publicUrl);
    }

    public WorkerConfig withMetricsPort(int value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, cleanupInterval, dashboardPort, value, leaseDir, limits, dashboardAccess, egress, secretsKey, webhooks, apiUrl, publicUrl);
    }

    public WorkerConfig withLeaseDir(Path value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, cleanupInterval, dashboardPort, metricsPort, value, limits, dashboardAccess, egress, secretsKey, webhooks, apiUrl, publicUrl);
    }


    public WorkerConfig withSweepInterval(Duration value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, value, pollInterval, cleanupInterval, dashboardPort, metricsPort, leaseDir, limits, dashboardAccess, egress, secretsKey, webhooks, apiUrl, publicUrl);
    }

    public WorkerConfig withLimits(Limits value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, cleanupInterval, dashboardPort, metricsPort, leaseDir, value, dashboardAccess, egress, secretsKey, webhooks, apiUrl, publicUrl);
    }

    public WorkerConfig withEgress(EgressPolicy value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, cleanupInterval, dashboardPort, metricsPort, leaseDir, limits, dashboardAccess, value, secretsKey, webhooks, apiUrl, publicUrl);
    }

    public WorkerConfig withSecretsKey(SecretsKey value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, cleanupInterval, dashboardPort, metricsPort, leaseDir, limits, dashboardAccess, egress, value, webhooks, apiUrl, publicUrl);
    }

    /** Where completion webhooks may be sent ({@code --webhook-allow}). */
    public WorkerConfig withWebhooks(EgressPolicy value) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, cleanupInterval, dashboardPort, metricsPort, leaseDir, limits, dashboardAccess, egress, secretsKey, value, apiUrl, publicUrl);
    }

    /** Where runs reach Outrun's API ({@code --api-url}), and the tokens' issuer ({@code --public-url}; null: the same). */
    public WorkerConfig withApi(String api, String publicApi) {
        return new WorkerConfig(nodeId, slots, leaseTtl, outputFlush, sweepInterval, pollInterval, cleanupInterval, dashboardPort, metricsPort, leaseDir, limits, dashboardAccess, egress, secretsKey, webhooks, api, publicApi);
    }

    /** The issuer of this node's run tokens: {@code --public-url}, else {@code --api-url}; null: neither. */
    public String issuerUrl() {
        return publicUrl != null ? publicUrl : apiUrl;
    }

    private static void required(Duration value, String option) {
        if (value == null) {
            throw new ConfigException(option + " is required");
        }
    }
}
