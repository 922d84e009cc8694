import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Runs Outrun's benchmarks, each beside a baseline measured in the same run, prints the table and
 * writes results.json. Started by {@code bench/run}, which builds the jar and the image first.
 *
 * <p>Usage: Bench --jar worker/target/outrun.jar --classes DIR --out DIR [--quick] [--only a,b]
 * [--fast-db] with names dispatch, throughput, docker, sandbox, output, recovery, enqueue.
 */
public final class Bench {

    interface Figure {
        List<Support.Result> run() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        List<String> argv = Arrays.asList(args);
        boolean quick = argv.contains("--quick");
        boolean fastDb = argv.contains("--fast-db");
        Path jar = Path.of(value(argv, "--jar", "worker/target/outrun.jar"));
        Path classes = Path.of(value(argv, "--classes", "bench/out/classes"));
        Path out = Path.of(value(argv, "--out", "bench/out"));
        String image = value(argv, "--image", "outrun-sandbox:latest");
        String onlyArg = value(argv, "--only", "");
        Set<String> only = onlyArg.isBlank() ? Set.of() : Set.of(onlyArg.split(","));
        Files.createDirectories(out);
        Path logs = out.resolve("logs");

        List<Support.Result> results = new ArrayList<>();
        long started = System.nanoTime();
        String pgSettings;
        try (Support.Pg pg = new Support.Pg(!fastDb)) {
            pgSettings = pg.settings();
            results.add(new Support.Result("database", fastDb ? 0 : 1, fastDb ? "fast" : "durable", null, null, "", null,
                    pg.flags() + (fastDb ? " (--fast-db: commits may be lost; not how Outrun is deployed)"
                            : " (durable, as deployed)")));
            Support.log("%s; %s mode", pgSettings, quick ? "quick" : "full");
            Map<String, Figure> figures = new java.util.LinkedHashMap<>();
            figures.put("dispatch", () -> DispatchBench.run(pg, quick ? 60 : 200));
            figures.put("throughput", () -> ThroughputBench.run(pg, quick ? 300 : 1000, 3));
            figures.put("docker", () -> docker(quick ? 10 : 30, image));
            figures.put("sandbox", () -> SandboxBench.run(pg, image, quick ? 20 : 60, quick ? 40 : 120));
            figures.put("output", () -> OutputBench.run(pg, image));
            figures.put("recovery", () -> RecoveryBench.run(pg, jar, classes, logs, quick ? 1 : 3, true));
            figures.put("egress", () -> EgressBench.run(quick ? 500 : 2000));
            figures.put("enqueue", () -> {
                List<Support.Result> both = new ArrayList<>(EnqueueBench.run(pg, Duration.ofSeconds(quick ? 5 : 10),
                        Duration.ofSeconds(quick ? 15 : 30)));
                both.addAll(EnqueueBatchBench.run(pg, Duration.ofSeconds(quick ? 5 : 10), Duration.ofSeconds(quick ? 15 : 30)));
                return both;
            });
            for (Map.Entry<String, Figure> f : figures.entrySet()) {
                if (!only.isEmpty() && !only.contains(f.getKey())) {
                    continue;
                }
                long t0 = System.nanoTime();
                Support.log("== %s", f.getKey());
                try {
                    results.addAll(f.getValue().run());
                } catch (Exception | Error e) {
                    Support.log("%s failed: %s", f.getKey(), e);
                    e.printStackTrace();
                    results.add(Support.Result.notMeasured(f.getKey(), "", "", "failed: " + e));
                }
                Support.log("== %s took %.0f s", f.getKey(), (System.nanoTime() - t0) / 1e9);
            }
        }
        print(results, quick, pgSettings, (System.nanoTime() - started) / 1e9);
        // bench/fleet's rows (fleet_*) stay: each program replaces only its own rows.
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> rows = new com.fasterxml.jackson.databind.ObjectMapper().readValue(json(results), List.class);
        FleetReport.mergeResults(out.resolve("results.json"), rows, name -> !name.startsWith("fleet_"));
        System.out.println("\nwrote " + out.resolve("results.json"));
        boolean failed = results.stream().anyMatch(r -> Double.isNaN(r.value()));
        System.exit(failed ? 1 : 0);
    }

    static List<Support.Result> docker(int runs, String image) throws Exception {
        Map<String, List<Long>> times = DockerOverhead.measure(runs, image);
        double ours = Support.median(times.get(DockerOverhead.TO_REMOVED)) / 1e6;
        double base = Support.median(times.get(DockerOverhead.BASELINE)) / 1e6;
        double exit = Support.median(times.get(DockerOverhead.TO_EXIT)) / 1e6;
        Support.log("docker: sandbox %.0f ms (exit seen %.0f), docker run --rm %.0f ms", ours, exit, base);
        return List.of(Support.Result.of("docker_overhead", ours, "ms", base, "ratio <= 1.2", ours / base <= 1.2,
                String.format(Locale.ROOT, "median of %d, `true`: DockerSandbox start to container removed (exit seen:"
                        + " %.0f ms); baseline: docker run --rm (bench/docker-overhead)", runs, exit)));
    }

    static void print(List<Support.Result> results, boolean quick, String pg, double seconds) {
        System.out.printf(Locale.ROOT, "%nOutrun benchmarks (%s mode, %.0f s; %s; %d cores)%n%n", quick ? "quick" : "full",
                seconds, pg, Runtime.getRuntime().availableProcessors());
        System.out.printf("| %-30s | %12s | %12s | %7s | %-14s | %s%n", "name", "ours", "baseline", "ratio", "goal", "note");
        System.out.printf("|%s|%s|%s|%s|%s|%s%n", "-".repeat(32), "-".repeat(14), "-".repeat(14), "-".repeat(9),
                "-".repeat(16), "------");
        for (Support.Result r : results) {
            String mark = r.met() == null ? "" : r.met() ? " ok" : " MISS";
            System.out.printf(Locale.ROOT, "| %-30s | %12s | %12s | %7s | %-14s | %s%n", r.name(),
                    num(r.value(), r.unit()), r.baseline() == null ? "-" : num(r.baseline(), r.unit()),
                    r.ratio() == null ? "-" : String.format(Locale.ROOT, "%.2f", r.ratio()),
                    r.goal() + mark, r.note());
        }
    }

    static String num(double v, String unit) {
        if (Double.isNaN(v)) {
            return "-";
        }
        String n = Math.abs(v) >= 100 ? String.format(Locale.ROOT, "%.0f", v) : String.format(Locale.ROOT, "%.1f", v);
        return n + " " + unit;
    }

    static String json(List<Support.Result> results) {
        StringBuilder b = new StringBuilder("[\n");
        for (int i = 0; i < results.size(); i++) {
            Support.Result r = results.get(i);
            b.append("  {\"name\": ").append(str(r.name()))
                    .append(", \"value\": ").append(jnum(r.value()))
                    .append(", \"unit\": ").append(str(r.unit()))
                    .append(", \"baseline\": ").append(r.baseline() == null ? "null" : jnum(r.baseline()))
                    .append(", \"ratio\": ").append(r.ratio() == null ? "null" : jnum(r.ratio()))
                    .append(", \"note\": ").append(str(r.note() + (r.goal() == null || r.goal().isBlank() ? ""
                            : "; goal " + r.goal() + (r.met() == null ? "" : r.met() ? " (met)" : " (missed)"))))
                    .append(i < results.size() - 1 ? "},\n" : "}\n");
        }
        return b.append("]\n").toString();
    }

    static String jnum(double v) {
        return Double.isNaN(v) || Double.isInfinite(v) ? "null" : String.format(Locale.ROOT, "%.3f", v);
    }

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    static String value(List<String> argv, String name, String fallback) {
        int i = argv.indexOf(name);
        return i >= 0 && i + 1 < argv.size() ? argv.get(i + 1) : fallback;
    }

    /** A whole-number option that must be positive ({@code 10_000} is allowed), or an error naming it. */
    static int positive(List<String> argv, String name, int fallback) {
        String v = value(argv, name, String.valueOf(fallback));
        try {
            int n = Integer.parseInt(v.replace("_", "").replace(",", ""));
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // fall through to the error
        }
        throw new IllegalArgumentException(name + " must be a positive whole number, got: " + v);
    }
}
