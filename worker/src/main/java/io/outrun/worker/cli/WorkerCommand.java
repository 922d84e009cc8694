package io.outrun.worker.cli;

import io.outrun.core.config.ConfigException;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.core.trace.Tracing;
import io.outrun.sandbox.Sandbox;
import io.outrun.worker.node.DashboardAccess;
import io.outrun.worker.node.WorkerConfig;
import io.outrun.worker.node.WorkerNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Runs a worker node until SIGTERM/SIGINT; then gives its leases up for re-drive. */
@Command(name = "worker", mixinStandardHelpOptions = true, description = "Run a worker node.")
final class WorkerCommand implements Callable<Integer> {

    @Mixin
    DbOptions db;

    @Mixin
    FilesOptions files;

    @Mixin
    OwnerOptions owners;

    @Mixin
    SandboxOptions sandboxOptions;

    @Option(names = "--node-id", description = "This node's id (default: host-random)")
    String nodeId;

    @Option(names = "--slots", defaultValue = "" + WorkerConfig.DEFAULT_SLOTS, description = "Executions run at once (default ${DEFAULT-VALUE})")
    int slots;

    @Option(names = "--lease-ttl-ms", defaultValue = "" + WorkerConfig.DEFAULT_LEASE_TTL_MS, description = "Lease ttl in ms; renewed every ttl/3 (default ${DEFAULT-VALUE})")
    long leaseTtlMs;

    @Option(names = "--poll-interval-s", defaultValue = "" + WorkerConfig.DEFAULT_POLL_INTERVAL_S, description = "An idle node looks for work this often without a wake-up, in s (default ${DEFAULT-VALUE})")
    int pollSeconds;

    @Option(names = "--sweep-interval-ms", defaultValue = "" + WorkerConfig.DEFAULT_SWEEP_INTERVAL_MS, description = "Re-drive sweep interval in ms (default ${DEFAULT-VALUE}); one node of the fleet sweeps at a time")
    long sweepMs;


    @Option(names = "--cleanup-interval-s", defaultValue = "" + WorkerConfig.DEFAULT_CLEANUP_INTERVAL_S, description = "Remove leftover containers/processes every this many s (default ${DEFAULT-VALUE})")
    int cleanupSeconds;

    @Option(names = "--dashboard-port", defaultValue = "0",
            description = "Serve JobRunr's dashboard on this port (all interfaces); needs --dashboard-user and --dashboard-password, or --dashboard-no-auth; 0 = off")
    int dashboardPort;

    @Option(names = "--metrics-port", defaultValue = "0", description = "Serve this node's Prometheus metrics at /metrics and its readiness at /health on this port (all interfaces); 0 = off")
    int metricsPort;

    @Option(names = "--dashboard-user", defaultValue = "${env:OUTRUN_DASHBOARD_USER}", description = "Basic-auth user for the dashboard (env OUTRUN_DASHBOARD_USER)")
    String dashboardUser;

    @Option(names = "--dashboard-password", defaultValue = "${env:OUTRUN_DASHBOARD_PASSWORD}", description = "Basic-auth password for the dashboard (env OUTRUN_DASHBOARD_PASSWORD)")
    String dashboardPassword;

    @Option(names = "--lease-dir", defaultValue = WorkerConfig.DEFAULT_LEASE_DIR_TEXT, description = "Where runs' lease files live, the"
            + " files each run watches to kill itself when this node stops confirming its lease; a Docker engine must see"
            + " the same path (default ${DEFAULT-VALUE})")
    String leaseDir;

    @Option(names = "--drain-timeout-ms", defaultValue = "300000", description = "On SIGTERM (or outrun drain), how long"
            + " running executions may finish before the rest are handed back without spending an attempt"
            + " (default ${DEFAULT-VALUE}: give the platform's grace period a little more)")
    long drainTimeoutMs;

    @Option(names = "--dashboard-no-auth", description = "Serve the dashboard without a password, on purpose (it shows every command and can delete jobs)")
    boolean dashboardNoAuth;

    @Option(names = "--api-url", defaultValue = "${env:OUTRUN_API_URL}", description = "Where this node reaches Outrun's"
            + " API for its runs (env OUTRUN_API_URL): container runs reach it through the node's bridge as"
            + " $OUTRUN_API, host-process runs with network directly; none: runs cannot reach the API")
    String apiUrl;

    @Option(names = "--public-url", defaultValue = "${env:OUTRUN_PUBLIC_URL}", description = "The API's public URL, the"
            + " issuer of run tokens; the API nodes' --public-url (env OUTRUN_PUBLIC_URL; default: --api-url)")
    String publicUrl;

    @picocli.CommandLine.Mixin
    SecretsKeyOptions secretsKey;

    @picocli.CommandLine.Mixin
    WebhookOptions webhooks;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        files.activate();
        String id = nodeId != null ? nodeId : defaultNodeId();
        WorkerConfig config = new WorkerConfig(id, slots, Duration.ofMillis(leaseTtlMs),
                Duration.ofMillis(WorkerConfig.DEFAULT_OUTPUT_FLUSH_MS), Duration.ofMillis(sweepMs),
                Duration.ofSeconds(pollSeconds), Duration.ofSeconds(cleanupSeconds),
                dashboardPort, metricsPort, Path.of(leaseDir), sandboxOptions.limits(),
                new DashboardAccess(dashboardUser, dashboardPassword, dashboardNoAuth), sandboxOptions.egress())
                .withSecretsKey(secretsKey.key()).withWebhooks(webhooks.policy()).withApi(apiUrl, publicUrl);
        if (drainTimeoutMs < 0) {
            throw new ConfigException("--drain-timeout-ms must be 0 or more, got: " + drainTimeoutMs);
        }
        DatabaseConfig dbConfig = db.toConfig(DatabaseConfig.WORKER_POOL_SIZE);
        if (secretsKey.file != null) {
            sandboxOptions.hide(secretsKey.file.toAbsolutePath()); // host-process runs must not read the key that opens every secret
        }
        Sandbox sandbox = sandboxOptions.open(id);
        WorkerNode node = WorkerNode.open(dbConfig, config, sandbox, owners.toLimits());
        CountDownLatch stopped = new CountDownLatch(1);
        // SIGTERM (a platform's rolling deploy) drains: running executions may finish within
        // --drain-timeout-ms, the rest are handed back without spending an attempt, then exit 0.
        // A second SIGTERM stops at once. Other exits (SIGINT) stop at once too.
        AtomicInteger terms = new AtomicInteger();
        AtomicBoolean drainStarted = new AtomicBoolean();
        Runnable drainThenStop = () -> {
            if (!drainStarted.compareAndSet(false, true)) {
                return; // a SIGTERM and `outrun drain` share one drain
            }
            node.drain(Duration.ofMillis(drainTimeoutMs));
            node.close();
            stopped.countDown();
        };
        node.onDrainRequest(drainThenStop);
        sun.misc.Signal.handle(new sun.misc.Signal("TERM"), signal -> {
            if (terms.incrementAndGet() == 1) {
                Thread t = new Thread(drainThenStop, "outrun-drain");
                t.setDaemon(true);
                t.start();
            } else {
                node.close();
                stopped.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            node.close();
            Tracing.closeProcess(); // after the drain: its attempts' spans are exported
            stopped.countDown();
        }, "outrun-shutdown"));
        spec.commandLine().getOut().println("outrun: worker " + id + " ready (" + slots + " slots, sandbox " + sandbox.name() + ")");
        spec.commandLine().getOut().flush();
        stopped.await();
        return 0;
    }

    static String defaultNodeId() {
        String host = System.getenv().getOrDefault("HOSTNAME", "node").replaceAll("[^A-Za-z0-9._-]", "-");
        if (host.length() > 40) {
            host = host.substring(0, 40);
        }
        return host + "-" + UUID.randomUUID().toString().substring(0, 8);
    }
}
