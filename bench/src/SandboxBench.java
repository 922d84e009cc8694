import io.outrun.core.execution.Execution;
import io.outrun.core.execution.Submission;
import io.outrun.core.secrets.SecretsKey;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.docker.DockerSandbox;
import io.outrun.sandbox.docker.DockerSandboxConfig;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.worker.node.WorkerConfig;
import io.outrun.worker.node.WorkerNode;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Docker sandbox as a user meets it, on an in-process worker node (4 slots) with the Docker
 * sandbox, beside {@code docker run --rm} of the same image:
 * <ul>
 * <li>sandbox start: submit returning → the command's first instruction in its container (it
 * prints bash's {@code $EPOCHREALTIME}; containers share the host's clock), with the warm pool
 * (the default) and without ({@code --pool-size 0}); baseline: {@code docker run --rm IMAGE bash
 * -c 'echo $EPOCHREALTIME'} (with {@code --network none}, as ours: no network to set up on either
 * side), from before the CLI is spawned to that instruction, interleaved.
 * <li>executions/s of {@code true}: N queued, then the node started; busy rate as in
 * {@link ThroughputBench}; baseline: N × {@code docker run --rm IMAGE true} in as many parallel
 * loops as the node has slots.
 * </ul>
 */
final class SandboxBench {

    static final String COMMAND = "echo $EPOCHREALTIME";
    static final int SLOTS = 4;

    static List<Support.Result> run(Support.Pg pg, String image, int samples, int executions) throws Exception {
        List<Double> pooled = new ArrayList<>();
        List<Double> fresh = new ArrayList<>();
        List<Double> dockerRun = new ArrayList<>();
        starts(pg.fresh("bench_sbx_pool"), image, -1, samples, pooled, dockerRun);
        starts(pg.fresh("bench_sbx_nopool"), image, 0, samples, fresh, dockerRun);
        List<Double> bridged = new ArrayList<>();
        List<Double> bridgedBase = new ArrayList<>();
        starts(pg.fresh("bench_sbx_bridge"), image, -1, samples, bridged, bridgedBase, true);
        double p50 = Support.median(pooled);
        double p99 = Support.percentile(pooled, 0.99);
        double f50 = Support.median(fresh);
        double b50 = Support.median(dockerRun);
        double b99 = Support.percentile(dockerRun, 0.99);
        Support.log("sandbox start: pool p50 %.0f p99 %.0f ms; no pool p50 %.0f ms; docker run --rm p50 %.0f p99 %.0f ms",
                p50, p99, f50, b50, b99);
        String note = String.format(Locale.ROOT, "%d samples each, 1 idle node (4 slots, Docker sandbox, warm pool of 4),"
                + " submit returning -> first instruction in the container; baseline: docker run --rm --network none %s bash -c 'echo"
                + " $EPOCHREALTIME', spawn -> first instruction, interleaved (%d samples)", samples, image, dockerRun.size());
        List<Support.Result> results = new ArrayList<>();
        results.add(Support.Result.of("sandbox_start_p50_ms", p50, "ms", b50, "<= 100 ms and ratio <= 0.4",
                p50 <= 100 && p50 / b50 <= 0.4, note));
        results.add(Support.Result.of("sandbox_start_p99_ms", p99, "ms", b99, "(reference)", null, note));
        results.add(Support.Result.of("sandbox_start_nopool_p50_ms", f50, "ms", b50, "(reference)", null,
                "the same with the warm pool off (--pool-size 0): a container created and started per run"));
        double g50 = Support.median(bridged);
        double g99 = Support.percentile(bridged, 0.99);
        double gb50 = Support.median(bridgedBase);
        double gb99 = Support.percentile(bridgedBase, 0.99);
        Support.log("sandbox start (pool, API bridge on): p50 %.0f p99 %.0f ms; docker run --rm p50 %.0f p99 %.0f ms", g50, g99,
                gb50, gb99);
        String bridgeNote = "the same with the warm pool and the node's API bridge on (--api-url, a secrets key: each run its"
                + " token and relay to $OUTRUN_API, which the command never calls), as outrun dev --sandbox docker runs;"
                + " baseline as above, interleaved";
        results.add(Support.Result.of("sandbox_start_bridge_p50_ms", g50, "ms", gb50, "ratio <= 2", g50 <= 2 * gb50, bridgeNote));
        results.add(Support.Result.of("sandbox_start_bridge_p99_ms", g99, "ms", gb99, "(reference)", null, bridgeNote));

        double ours = throughput(pg.fresh("bench_sbx_tput"), image, executions);
        double base = dockerRunLoops(image, executions, SLOTS);
        Support.log("docker throughput: ours %.1f/s, %d parallel docker run --rm loops %.1f/s", ours, SLOTS, base);
        results.add(Support.Result.of("docker_throughput_per_s", ours, "exec/s", base, "ratio >= 1.0", ours / base >= 1.0,
                String.format(Locale.ROOT, "busy rate of %d x `true`, 1 node x %d slots, Docker sandbox with its warm pool;"
                        + " baseline: %d parallel loops of docker run --rm --network none %s true, %d runs in all", executions, SLOTS,
                        SLOTS, image, executions)));
        return results;
    }

    private static WorkerNode node(DatabaseConfig db, String name, String image, int poolSize) {
        return node(db, name, image, poolSize, false);
    }

    /** {@code bridge}: the node's API bridge on, as {@code outrun dev} has it (the URL is never called). */
    private static WorkerNode node(DatabaseConfig db, String name, String image, int poolSize, boolean bridge) {
        DockerSandbox sandbox = new DockerSandbox(DockerSandboxConfig.defaults(name).withImage(image));
        if (poolSize >= 0) {
            sandbox.withPoolSize(poolSize);
        }
        WorkerConfig config = WorkerConfig.defaults(name);
        if (bridge) {
            config = config.withApi("http://127.0.0.1:9", null).withSecretsKey(SecretsKey.fromBase64(SecretsKey.generate(), "bench"));
        }
        return WorkerNode.open(db, config, sandbox, Limits.DEFAULTS);
    }

    private static void starts(DatabaseConfig db, String image, int poolSize, int samples, List<Double> ours,
                               List<Double> dockerRun) throws Exception {
        starts(db, image, poolSize, samples, ours, dockerRun, false);
    }

    private static void starts(DatabaseConfig db, String image, int poolSize, int samples, List<Double> ours,
                               List<Double> dockerRun, boolean bridge) throws Exception {
        try (Core api = Core.open(db, "bench-api");
             WorkerNode node = node(db, "bench-sbx-" + (poolSize == 0 ? "nopool" : bridge ? "bridge" : "pool"), image, poolSize,
                     bridge)) {
            if (bridge) {
                DispatchBench.bridged(api);
            }
            for (int i = -3; i < samples; i++) { // three warm-up rounds, not recorded
                // Long enough for the pool to refill behind the previous run, as between an agent's commands.
                Thread.sleep(300 + ThreadLocalRandom.current().nextInt(200));
                double oursMs = sample(api);
                double baseMs = dockerRunFirstInstruction(image);
                if (i >= 0) {
                    ours.add(oursMs);
                    dockerRun.add(baseMs);
                }
            }
        }
    }

    static double sample(Core api) throws Exception {
        UUID id = api.service().submit(Submission.of("bench", COMMAND)).execution().id();
        long returned = Support.micros(Instant.now());
        Execution done = Support.await("execution " + id, Duration.ofSeconds(60), 5,
                () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
        String out = done.stdout().text();
        if (done.exitCode() == null || done.exitCode() != 0 || out.isBlank()) {
            throw new IllegalStateException("sandbox sample failed: " + done.status() + " " + done.errorMessage() + " " + out);
        }
        return (Support.epochMicros(out) - returned) / 1000.0;
    }

    static double dockerRunFirstInstruction(String image) throws Exception {
        long before = Support.micros(Instant.now());
        Process p = new ProcessBuilder("docker", "run", "--rm", "--network", "none", image, "bash", "-c", COMMAND).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IllegalStateException("docker run failed: " + out);
        }
        return (Support.epochMicros(out) - before) / 1000.0;
    }

    static double throughput(DatabaseConfig db, String image, int executions) throws Exception {
        try (Core api = Core.open(db, "bench-api")) {
            for (int i = 0; i < executions; i++) {
                api.service().submit(Submission.of("bench", "true"));
            }
            try (WorkerNode node = node(db, "bench-sbx-tput", image, -1)) {
                Support.await("all executions ended", Duration.ofMinutes(10), 100, () -> {
                    try (Connection c = Support.connect(db); Statement st = c.createStatement();
                         ResultSet rs = st.executeQuery("SELECT count(*) FROM executions WHERE finished_at IS NULL")) {
                        rs.next();
                        return rs.getLong(1) == 0;
                    }
                });
            }
            try (Connection c = Support.connect(db); Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT status, started_at, finished_at FROM executions")) {
                Instant first = null;
                List<Instant> ends = new ArrayList<>();
                while (rs.next()) {
                    if (!"succeeded".equals(rs.getString(1))) {
                        throw new IllegalStateException("an execution ended " + rs.getString(1));
                    }
                    Instant begun = rs.getTimestamp(2).toInstant();
                    first = first == null || begun.isBefore(first) ? begun : first;
                    ends.add(rs.getTimestamp(3).toInstant());
                }
                return ThroughputBench.Rate.of(first, ends).busy();
            }
        }
    }

    static double dockerRunLoops(String image, int executions, int loops) throws Exception {
        AtomicInteger left = new AtomicInteger(executions);
        ExecutorService pool = Executors.newFixedThreadPool(loops);
        long start = System.nanoTime();
        try {
            List<Future<?>> running = new ArrayList<>();
            for (int l = 0; l < loops; l++) {
                running.add(pool.submit(() -> {
                    while (left.getAndDecrement() > 0) {
                        DockerOverhead.cli("docker", "run", "--rm", "--network", "none", image, "true");
                    }
                    return null;
                }));
            }
            for (Future<?> f : running) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        return executions / ((System.nanoTime() - start) / 1e9);
    }
}
