import io.outrun.core.execution.Execution;
import io.outrun.core.execution.Submission;
import io.outrun.core.secrets.SecretsKey;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.worker.node.WorkerConfig;
import io.outrun.worker.node.WorkerNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Dispatch latency: from {@code submit} returning to the command's first instruction, which
 * prints bash's {@code $EPOCHREALTIME} (a builtin, so no fork sits in between). Same machine
 * clock on both ends. One idle node on the host-process sandbox, default settings. Baseline:
 * spawning the same bash command directly, interleaved with ours.
 */
final class DispatchBench {

    static final String COMMAND = "echo $EPOCHREALTIME";

    static List<Support.Result> run(Support.Pg pg, int samples) throws Exception {
        List<Support.Result> results = new ArrayList<>();
        DatabaseConfig db = pg.fresh("bench_dispatch");
        List<Double> ours = new ArrayList<>();
        List<Double> spawn = new ArrayList<>();
        List<Double> fresh = new ArrayList<>();
        List<Double> freshSpawn = new ArrayList<>();
        try (Core api = Core.open(db, "bench-api");
             WorkerNode node = WorkerNode.open(db, WorkerConfig.defaults("bench-dispatch"), new ProcessSandbox(), Limits.DEFAULTS)) {
            sampleInto(api, 5, null, null); // the node's first runs: class loading, connections
            // A node that just started runs this path partly interpreted (the claim,
            // Jackson, pgjdbc, ours): recorded as a reference, then warmed up before the figure,
            // as on a node that has been serving a while.
            sampleInto(api, samples, fresh, freshSpawn);
            for (int i = 0; i < WARM_UP; i++) {
                sample(api);
            }
            sampleInto(api, samples, ours, spawn);
        }
        double p50 = Support.median(ours);
        double p99 = Support.percentile(ours, 0.99);
        double b50 = Support.median(spawn);
        double b99 = Support.percentile(spawn, 0.99);
        String n = ours.size() + " samples, 1 idle node, process sandbox (warm pool), after " + (samples + WARM_UP + 5)
                + " unrecorded runs; baseline: bash spawned directly (ProcessBuilder)";
        results.add(Support.Result.of("dispatch_p50_ms", p50, "ms", b50, "<= 10 ms", p50 <= 10, n));
        results.add(Support.Result.of("dispatch_p99_ms", p99, "ms", b99, "<= 50 ms", p99 <= 50, n));
        results.add(Support.Result.of("dispatch_fresh_node_p50_ms", Support.median(fresh), "ms", Support.median(freshSpawn),
                "(reference)", null, fresh.size() + " samples: the same node's runs 6 to " + (fresh.size() + 5)
                        + " after its start (p99 " + String.format("%.1f", Support.percentile(fresh, 0.99)) + " ms)"));
        Support.log("dispatch: p50 %.1f ms p99 %.1f ms (spawn p50 %.1f p99 %.1f), max %.1f", p50, p99, b50, b99,
                Support.percentile(ours, 1.0));
        results.addAll(dev(pg, samples));
        return results;
    }

    /** Unrecorded runs before the dev node's samples (fewer than the default node's: a reference node). */
    static final int DEV_WARM_UP = 100;

    /**
     * As {@code outrun dev} runs: each run in bubblewrap (where it can run here) and the node's
     * API bridge on (an issuer and a secrets key, so every run gets its token and its relay to
     * {@code $OUTRUN_API}; the command never calls it). Baseline: the same bubblewrap (the
     * sandbox's own arguments) spawned directly with the same bash command, interleaved.
     */
    static List<Support.Result> dev(Support.Pg pg, int samples) throws Exception {
        ProcessSandbox sandbox = new ProcessSandbox();
        try {
            sandbox.isolated(List.of());
        } catch (RuntimeException e) {
            sandbox.close();
            Support.log("dispatch (dev): skipped, no bubblewrap here: %s", e.getMessage());
            return List.of();
        }
        List<String> bare = sandbox.bareIsolatedArgv(List.of("/bin/bash", "-c", COMMAND), Limits.DEFAULTS.network());
        DatabaseConfig db = pg.fresh("bench_dispatch_dev");
        Path leases = Files.createTempDirectory(Path.of("/tmp"), "outrun-bench-leases-");
        List<Double> ours = new ArrayList<>();
        List<Double> spawn = new ArrayList<>();
        // The bridge relays to this URL only when a run sends a request, which the command never does.
        WorkerConfig config = WorkerConfig.defaults("bench-dev").withLeaseDir(leases).withApi("http://127.0.0.1:9", null)
                .withSecretsKey(SecretsKey.fromBase64(SecretsKey.generate(), "bench"));
        try (Core api = Core.open(db, "bench-api");
             WorkerNode node = WorkerNode.open(db, config, sandbox, Limits.DEFAULTS)) {
            bridged(api);
            sampleInto(api, 5, null, null, bare);
            for (int i = 0; i < DEV_WARM_UP; i++) {
                sample(api);
            }
            sampleInto(api, samples, ours, spawn, bare);
        }
        double p50 = Support.median(ours);
        double p99 = Support.percentile(ours, 0.99);
        double b50 = Support.median(spawn);
        double b99 = Support.percentile(spawn, 0.99);
        String n = ours.size() + " samples, 1 idle node as outrun dev runs it: bubblewrap, API bridge on (each run its token"
                + " and relay), after " + (DEV_WARM_UP + 5) + " unrecorded runs; baseline: the same bwrap arguments spawned"
                + " directly (ProcessBuilder)";
        Support.log("dispatch (dev: bubblewrap + bridge): p50 %.1f ms p99 %.1f ms (bwrap spawn p50 %.1f p99 %.1f)", p50, p99,
                b50, b99);
        return List.of(
                Support.Result.of("dispatch_dev_p50_ms", p50, "ms", b50, "ratio <= 2", p50 <= 2 * b50, n),
                Support.Result.of("dispatch_dev_p99_ms", p99, "ms", b99, "(reference)", null, n));
    }

    /** Fails the figure if the node's runs do not get the bridge (the figure would not be what dev runs). */
    static void bridged(Core api) throws Exception {
        UUID id = api.service().submit(Submission.of("bench", "echo \"$OUTRUN_API\"")).execution().id();
        Execution done = Support.await("execution " + id, Duration.ofSeconds(60), 20,
                () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
        if (!done.stdout().text().strip().equals("http://127.0.0.1:7171")) {
            throw new IllegalStateException("the dev node's runs have no API bridge: " + done.status() + " "
                    + done.stdout().text() + done.stderr().text());
        }
    }

    /** Unrecorded runs between the fresh node's samples and the recorded ones. */
    static final int WARM_UP = 300;

    /** {@code n} samples, each after a random pause, interleaved with the baseline; null lists: not recorded. */
    static void sampleInto(Core api, int n, List<Double> ours, List<Double> spawn) throws Exception {
        sampleInto(api, n, ours, spawn, List.of("/bin/bash", "-c", COMMAND));
    }

    /** As above, the baseline spawning {@code baseline}. */
    static void sampleInto(Core api, int n, List<Double> ours, List<Double> spawn, List<String> baseline) throws Exception {
        for (int i = 0; i < n; i++) {
            Thread.sleep(50 + ThreadLocalRandom.current().nextInt(100));
            double oursMs = sample(api);
            double spawnMs = spawnDirectly(baseline);
            if (ours != null) {
                ours.add(oursMs);
                spawn.add(spawnMs);
            }
        }
    }

    /** One submit, waited to its end; milliseconds from submit's return to the command's first instruction. */
    static double sample(Core api) throws Exception {
        UUID id = api.service().submit(Submission.of("bench", COMMAND)).execution().id();
        long returned = Support.micros(Instant.now());
        // Polled every 20 ms: the figure is read from the command's output, so the poll only
        // decides when the sample ends, and a tighter one would load the 2 cores it measures.
        Execution done = Support.await("execution " + id, Duration.ofSeconds(60), 20,
                () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
        String out = done.stdout().text();
        if (done.exitCode() == null || done.exitCode() != 0 || out.isBlank()) {
            throw new IllegalStateException("dispatch sample failed: " + done.status() + " " + done.errorMessage() + " " + out);
        }
        return (Support.epochMicros(out) - returned) / 1000.0;
    }

    static double spawnDirectly(List<String> argv) throws Exception {
        long before = Support.micros(Instant.now());
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        return (Support.epochMicros(out) - before) / 1000.0;
    }
}
