import com.sun.management.GarbageCollectionNotificationInfo;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.Submission;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.docker.DockerSandbox;
import io.outrun.sandbox.docker.DockerSandboxConfig;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.worker.node.WorkerConfig;
import io.outrun.worker.node.WorkerNode;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

/**
 * A command printing 1 GiB through the Docker sandbox of an in-process worker node. Heap growth:
 * the largest live heap seen after any GC during the run, minus the live heap after a full GC
 * before it. Rate: bytes / (finished - started), database clock (includes container start).
 * Baseline: the same command in a container with Docker's default json-file log driver, then
 * {@code docker logs} of it into /dev/null, timed.
 */
final class OutputBench {

    static final long BYTES = 1L << 30;
    /** 1 KiB lines: 1023 zeros and a newline; bash's printf is a builtin, yes and head are coreutils. */
    static final String COMMAND = "yes \"$(printf '%01023d' 0)\" | head -c " + BYTES;

    static List<Support.Result> run(Support.Pg pg, String image) throws Exception {
        DatabaseConfig db = pg.fresh("bench_output");
        double seconds;
        long heapBefore;
        long heapMax;
        try (Core api = Core.open(db, "bench-api");
             WorkerNode node = WorkerNode.open(db, WorkerConfig.defaults("bench-output"),
                     new DockerSandbox(DockerSandboxConfig.defaults("bench-output").withImage(image)), Limits.DEFAULTS)) {
            // Warm the path (JIT, connections, container start) with a small run first.
            runOne(api, "yes | head -c 10000000");
            System.gc();
            Thread.sleep(200);
            heapBefore = heapUsed();
            AtomicLong maxAfterGc = new AtomicLong(heapBefore);
            try (AutoCloseable watch = watchGc(maxAfterGc)) {
                Execution e = runOne(api, COMMAND);
                if (e.stdout().totalBytes() != BYTES) {
                    throw new IllegalStateException("captured " + e.stdout().totalBytes() + " bytes, expected " + BYTES);
                }
                seconds = Duration.between(e.startedAt(), e.finishedAt()).toNanos() / 1e9;
            }
            heapMax = maxAfterGc.get();
        }
        double ourRate = BYTES / (1024.0 * 1024.0) / seconds;
        double growthMib = Math.max(0, heapMax - heapBefore) / (1024.0 * 1024.0);

        double logsSeconds = dockerLogsSeconds(image);
        double baseRate = BYTES / (1024.0 * 1024.0) / logsSeconds;
        Support.log("output: %.0f MiB/s (docker logs %.0f MiB/s), heap growth %.1f MiB", ourRate, baseRate, growthMib);
        List<Support.Result> results = new ArrayList<>();
        results.add(Support.Result.of("output_heap_mib", growthMib, "MiB", null, "<= 64 MiB", growthMib <= 64,
                "1 GiB through the Docker sandbox; live heap after GC, max during the run minus before"));
        results.add(Support.Result.of("output_mb_per_s", ourRate, "MiB/s", baseRate, "(vs docker logs)", null,
                "start to end of the execution, incl. container start; baseline: docker logs (json-file) > /dev/null"));
        return results;
    }

    private static Execution runOne(Core api, String command) throws Exception {
        UUID id = api.service().submit(Submission.of("bench", command).withTimeoutMs(600_000)).execution().id();
        Execution e = Support.await("output execution", Duration.ofMinutes(10), 100,
                () -> api.submissions().find(id).filter(x -> x.status().isTerminal()).orElse(null));
        if (e.exitCode() == null || e.exitCode() != 0) {
            throw new IllegalStateException("output run failed: " + e.status() + " " + e.errorMessage() + " " + e.stderr().text());
        }
        return e;
    }

    static double dockerLogsSeconds(String image) throws Exception {
        String name = "outrun-bench-logs-" + ProcessHandle.current().pid();
        cli(true, "docker", "rm", "-f", name);
        try {
            cli(false, "docker", "run", "-d", "--name", name, "--log-driver", "json-file", "--network", "none",
                    image, "bash", "-c", COMMAND);
            cli(false, "docker", "wait", name);
            long start = System.nanoTime();
            cli(false, "docker", "logs", name);
            return (System.nanoTime() - start) / 1e9;
        } finally {
            cli(true, "docker", "rm", "-f", name);
        }
    }

    private static void cli(boolean quiet, String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(quiet ? ProcessBuilder.Redirect.DISCARD : ProcessBuilder.Redirect.INHERIT).start();
        int rc = p.waitFor();
        if (rc != 0 && !quiet) {
            throw new IllegalStateException(String.join(" ", command) + " exited " + rc);
        }
    }

    private static long heapUsed() {
        return ManagementFactory.getMemoryPoolMXBeans().stream()
                .filter(p -> p.getType() == MemoryType.HEAP)
                .mapToLong(p -> p.getUsage().getUsed()).sum();
    }

    /** Records the largest heap in use right after any collection (live set plus not yet collected old garbage). */
    private static AutoCloseable watchGc(AtomicLong maxAfterGc) {
        Set<String> heapPools = ManagementFactory.getMemoryPoolMXBeans().stream()
                .filter(p -> p.getType() == MemoryType.HEAP).map(MemoryPoolMXBean::getName).collect(Collectors.toSet());
        NotificationListener listener = (Notification n, Object handback) -> {
            if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(n.getType())) {
                return;
            }
            var info = GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData());
            long used = 0;
            for (Map.Entry<String, MemoryUsage> e : info.getGcInfo().getMemoryUsageAfterGc().entrySet()) {
                if (heapPools.contains(e.getKey())) {
                    used += e.getValue().getUsed();
                }
            }
            long u = used;
            maxAfterGc.accumulateAndGet(u, Math::max);
        };
        List<NotificationEmitter> emitters = new ArrayList<>();
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            NotificationEmitter emitter = (NotificationEmitter) gc;
            emitter.addNotificationListener(listener, null, null);
            emitters.add(emitter);
        }
        return () -> {
            for (NotificationEmitter e : emitters) {
                e.removeNotificationListener(listener);
            }
        };
    }
}
