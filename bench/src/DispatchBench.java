import io.outrun.core.execution.Execution;
import io.outrun.core.execution.Submission;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.worker.node.WorkerConfig;
import io.outrun.worker.node.WorkerNode;
import java.nio.charset.StandardCharsets;
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

        return results;
    }

    /** Unrecorded runs between the fresh node's samples and the recorded ones. */
    static final int WARM_UP = 300;

    /** {@code n} samples, each after a random pause, interleaved with the baseline; null lists: not recorded. */
    static void sampleInto(Core api, int n, List<Double> ours, List<Double> spawn) throws Exception {
        for (int i = 0; i < n; i++) {
            Thread.sleep(50 + ThreadLocalRandom.current().nextInt(100));
            double oursMs = sample(api);
            double spawnMs = spawnDirectly();
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

    static double spawnDirectly() throws Exception {
        long before = Support.micros(Instant.now());
        Process p = new ProcessBuilder("/bin/bash", "-c", COMMAND).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        return (Support.epochMicros(out) - before) / 1000.0;
    }
}
