import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.docker.DockerSandbox;
import io.outrun.sandbox.docker.DockerSandboxConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * Start-to-exit overhead of DockerSandbox for {@code true} against {@code docker run --rm} of the
 * same image, measured in one run, variants interleaved so that drift hits all alike.
 * Usage: java -cp CLASSPATH DockerOverhead.java [runs] [image]
 */
public class DockerOverhead {

    static final String BASELINE = "docker run --rm --network none IMAGE true (baseline)";
    static final String TO_EXIT = "DockerSandbox start -> exit seen (awaitExit)";
    static final String TO_REMOVED = "DockerSandbox start -> container removed (close)";

    public static void main(String[] args) throws Exception {
        int runs = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        String image = args.length > 1 ? args[1] : DockerSandboxConfig.DEFAULT_IMAGE;
        Map<String, List<Long>> exitTimes = measure(runs, image);
        System.out.printf("%d runs each, image %s%n%n", runs, image);
        System.out.printf("| %-50s | %9s | %9s | %9s |%n", "variant", "median ms", "min ms", "p90 ms");
        System.out.printf("|%s|%s|%s|%s|%n", "-".repeat(52), "-".repeat(11), "-".repeat(11), "-".repeat(11));
        long baseline = median(exitTimes.get(BASELINE));
        exitTimes.forEach((name, times) -> System.out.printf("| %-50s | %9.0f | %9.0f | %9.0f |%n",
                name, median(times) / 1e6, Collections.min(times) / 1e6, percentile(times, 0.9) / 1e6));
        System.out.printf("%nDockerSandbox to removal vs baseline: %+.0f ms (median)%n",
                (median(exitTimes.get(TO_REMOVED)) - baseline) / 1e6);
    }

    /** Nanoseconds per run of each variant, in the order of the table; also used by bench/run. */
    static Map<String, List<Long>> measure(int runs, String image) throws Exception {
        try (DockerSandbox sandbox = new DockerSandbox(DockerSandboxConfig.defaults("bench").withImage(image))) {
            sandbox.verify();
            Map<String, Callable<Long>> variants = new LinkedHashMap<>();
            variants.put(BASELINE, () -> cli("docker", "run", "--rm", "--network", "none", image, "true"));
            variants.put("docker run --rm, same hardening flags, true", () -> cli("docker", "run", "--rm",
                    "--user", "10001:10001", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--read-only",
                    "--tmpfs", "/work:rw,exec,nosuid,nodev,size=268435456", "--tmpfs", "/tmp:rw,exec,nosuid,nodev,size=268435456",
                    "--network", "none", "--memory", "512m", "--memory-swap", "512m", "--cpus", "1", "--pids-limit", "256",
                    "--init", "--log-driver", "none", "-w", "/work", image, "true"));
            Map<String, List<Long>> exitTimes = new LinkedHashMap<>();
            variants.keySet().forEach(k -> exitTimes.put(k, new ArrayList<>()));
            String toExit = TO_EXIT;
            String toRemoved = TO_REMOVED;
            exitTimes.put(toExit, new ArrayList<>());
            exitTimes.put(toRemoved, new ArrayList<>());

            for (int i = -2; i < runs; i++) { // two warm-up rounds, not recorded
                for (Map.Entry<String, Callable<Long>> variant : variants.entrySet()) {
                    long nanos = variant.getValue().call();
                    if (i >= 0) exitTimes.get(variant.getKey()).add(nanos);
                }
                long start = System.nanoTime();
                long exited;
                try (Run run = sandbox.start(RunSpec.of("true", Duration.ofSeconds(60)))) {
                    Exit exit = run.awaitExit(Duration.ofSeconds(60)).orElseThrow();
                    if (exit.exitCode() != 0) throw new IllegalStateException("exit " + exit);
                    exited = System.nanoTime() - start;
                }
                long removed = System.nanoTime() - start;
                if (i >= 0) {
                    exitTimes.get(toExit).add(exited);
                    exitTimes.get(toRemoved).add(removed);
                }
            }
            return exitTimes;
        }
    }

    static long cli(String... command) throws Exception {
        long start = System.nanoTime();
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (process.waitFor() != 0) throw new IllegalStateException(String.join(" ", command) + " failed");
        return System.nanoTime() - start;
    }

    static long median(List<Long> times) {
        return percentile(times, 0.5);
    }

    static long percentile(List<Long> times, double p) {
        List<Long> sorted = new ArrayList<>(times);
        Collections.sort(sorted);
        return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(p * sorted.size()) - 1));
    }
}
