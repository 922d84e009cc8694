import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * The fleet harness's table (one column per N) and files: {@code fleet.json} with everything
 * (per-N figures, the busiest statements of each window, connections by node, query plans), and
 * {@code fleet_*} rows merged into {@code results.json} in bench/run's row shape.
 */
final class FleetReport {

    /** A figure's meaning, unit and the goal for it ({@code check} is null where none applies). */
    record Metric(String key, String label, String unit, String goal, Function<Map<Integer, Double>, Boolean> check) {
    }

    static final List<Metric> METRICS = List.of(
            new Metric("submit_seconds", "seconds to submit them all (paced)", "s", null, null),
            new Metric("statements_per_execution", "statements per execution (server log)", "", "N=max within 10% of N=1",
                    v -> withinTenPercent(v)),
            new Metric("statements_per_execution_pgss", "  same, pg_stat_statements (no COMMITs)", "", null, null),
            new Metric("statements_per_execution_net", "  same, log, idle subtracted", "", null, null),
            new Metric("onboarding_per_execution", "JobRunr onboarding queries per execution", "", "<= 1.5 at N=max",
                    v -> largest(v) <= 1.5),
            new Metric("onboarding_empty_share_pct", "  share of them finding no job (log)", "%", null, null),
            new Metric("wal_bytes_per_execution", "WAL per execution, idle subtracted", "B", null, null),
            new Metric("idle_statements_per_s", "idle statements/s, whole fleet (log)", "/s", null, null),
            new Metric("idle_statements_per_s_pgss", "  same, pg_stat_statements", "/s", null, null),
            new Metric("idle_sweep_tries_per_s", "  of which the re-drive sweep", "/s", "same at N=1 and N=max",
                    v -> withinTenPercent(v)),
            new Metric("idle_wal_bytes_per_s_per_node", "idle WAL per worker node", "B/s", null, null),
            new Metric("connections_per_worker", "connections per worker node (pool + LISTEN)", "", "<= 4",
                    v -> v.values().stream().allMatch(x -> x <= 4)),
            new Metric("connections_total_idle", "connections, whole fleet, idle", "", null, null),
            new Metric("connections_total_after_load", "connections, whole fleet, after load", "", null, null),
            new Metric("executions_per_node_min", "executions per node, min", "", null, null),
            new Metric("executions_per_node_max", "executions per node, max", "", null, null),
            new Metric("running_executions", "quiet running executions measured (K)", "", null, null),
            new Metric("running_statements_per_s_per_execution", "statements/s per running execution", "/s", null, null),
            new Metric("running_wal_bytes_per_s_per_execution", "WAL/s per running execution (all)", "B/s", null, null),
            new Metric("lease_wal_bytes_per_s_per_execution", "  ours (lease renewals; no jobrunr_ table)", "B/s",
                    "<= 100 B/s", v -> v.values().stream().allMatch(x -> x <= 100)),
            new Metric("jobrunr_wal_bytes_per_s_per_execution", "  JobRunr's own (jobrunr_ tables)", "B/s", null, null),
            new Metric("chatty_output_bytes", "chatty run: output bytes (random, default cap)", "B", null, null),
            new Metric("chatty_wal_per_output_byte", "  WAL per output byte, idle subtracted", "", "<= 2",
                    v -> v.values().stream().allMatch(x -> x <= 2)),
            new Metric("chatty_ours_wal_per_output_byte", "  same, our statements only (pgss)", "", null, null));

    /** One N's figures, and the windows behind them. */
    static final class Round {
        final int n;
        final Map<String, Double> figures = new LinkedHashMap<>();
        Map<String, Integer> connectionsIdle;
        Map<String, Integer> connectionsLoad;
        Map<String, Long> executionsPerNode;
        FleetProbe.Delta idle;
        FleetProbe.Delta load;
        FleetProbe.Delta running;
        FleetProbe.Delta chatty;

        Round(int n) {
            this.n = n;
        }

        void put(String key, double value) {
            figures.put(key, value);
        }
    }

    private final FleetBench.Config config;
    private final Map<Integer, Round> rounds = new TreeMap<>();
    private String settings = "";
    private Map<String, Object> bigTable;
    private String bigTableError;

    FleetReport(FleetBench.Config config) {
        this.config = config;
    }

    void settings(String s) {
        settings = s;
    }

    String settings() {
        return settings;
    }

    void round(int n, Round r) {
        rounds.put(n, r);
    }

    void bigTable(Map<String, Object> result) {
        bigTable = result;
    }

    void bigTableFailed(String why) {
        bigTableError = why;
    }

    void print(double seconds) {
        System.out.printf(Locale.ROOT, "%nOutrun fleet harness (%s mode, %.0f s; %s; %d cores)%n",
                config.quick() ? "quick" : "full", seconds, settings, Runtime.getRuntime().availableProcessors());
        System.out.printf(Locale.ROOT, "%d x `true` at %.0f/s; idle %d s; running window %d s; chatty %d s; workers: 4 slots,"
                        + " --sandbox process, %s%n%n", config.submits(), (double) config.rate(), config.idleSeconds(),
                config.runningSeconds(), config.chattySeconds(), String.join(" ", FleetNodes.JVM_FLAGS));
        if (!rounds.isEmpty()) {
            printRounds();
        }
        if (bigTable != null) {
            System.out.printf(Locale.ROOT, "Big table: %,d rows (%s), generated in %.0f s%n", (Long) bigTable.get("rows"),
                    bigTable.get("status_mix"), (Double) bigTable.get("generate_s"));
            for (String k : List.of("claim", "dashboard_watch", "listing_running", "listing_failed", "listing_cancelled_none")) {
                BigTable.Timed t = (BigTable.Timed) bigTable.get(k);
                System.out.printf(Locale.ROOT, "| %-52s | %10s | %s%n", k.replace('_', ' ') + " (EXPLAIN ANALYZE, ms)", num(t.ms()),
                        "goal < 20 ms" + (t.ms() < 20 ? " ok" : " MISS") + "; buffers " + t.buffers());
            }
            System.out.printf(Locale.ROOT, "| %-52s | %10s |%n", "listing status=running over HTTP (ms)", num((Double) bigTable.get("listing_http_ms")));
            for (Object w : (List<?>) bigTable.get("sql_warnings")) {
                System.out.println("WARNING: " + w);
            }
        } else {
            System.out.println("Big table: not measured: " + bigTableError);
        }
    }

    private void printRounds() {
        StringBuilder head = new StringBuilder(String.format("| %-52s |", "figure"));
        StringBuilder rule = new StringBuilder("|" + "-".repeat(54) + "|");
        for (int n : rounds.keySet()) {
            head.append(String.format(" %10s |", "N = " + n));
            rule.append("-".repeat(12)).append("|");
        }
        head.append(" goal");
        rule.append("------");
        System.out.println(head);
        System.out.println(rule);
        for (Metric m : METRICS) {
            StringBuilder line = new StringBuilder(String.format("| %-52s |", m.label() + (m.unit().isEmpty() ? "" : " (" + m.unit() + ")")));
            for (Round r : rounds.values()) {
                line.append(String.format(" %10s |", num(r.figures.getOrDefault(m.key(), Double.NaN))));
            }
            line.append(' ').append(goalText(m));
            System.out.println(line);
        }
        for (Round r : rounds.values()) {
            System.out.printf("%nN = %d: executions per node %s; connections idle %s, after load %s%n", r.n, r.executionsPerNode,
                    r.connectionsIdle, r.connectionsLoad);
        }
        System.out.println();
    }

    private String goalText(Metric m) {
        if (m.goal() == null) {
            return "";
        }
        Map<Integer, Double> values = values(m.key());
        if (values.isEmpty() || values.values().stream().anyMatch(v -> Double.isNaN(v))) {
            return m.goal();
        }
        return m.goal() + (m.check().apply(values) ? " ok" : " MISS");
    }

    private Map<Integer, Double> values(String key) {
        Map<Integer, Double> v = new TreeMap<>();
        rounds.forEach((n, r) -> {
            if (r.figures.containsKey(key)) {
                v.put(n, r.figures.get(key));
            }
        });
        return v;
    }

    private static boolean withinTenPercent(Map<Integer, Double> v) {
        double first = ((TreeMap<Integer, Double>) v).firstEntry().getValue();
        return Math.abs(largest(v) - first) <= 0.1 * Math.abs(first);
    }

    private static double largest(Map<Integer, Double> v) {
        return ((TreeMap<Integer, Double>) v).lastEntry().getValue();
    }

    static String num(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return "-";
        }
        double a = Math.abs(v);
        String f = a >= 1000 ? "%,.0f" : a >= 100 ? "%.0f" : a >= 10 ? "%.1f" : "%.2f";
        return String.format(Locale.ROOT, f, v);
    }

    void write(Path out) throws Exception {
        Map<String, Object> detail = new LinkedHashMap<>();
        detail.put("measured_at", Instant.now().toString());
        detail.put("settings", settings);
        detail.put("config", config.toString());
        Map<String, Object> perN = new LinkedHashMap<>();
        for (Round r : rounds.values()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("figures", r.figures);
            m.put("executions_per_node", r.executionsPerNode);
            m.put("connections_idle", r.connectionsIdle);
            m.put("connections_after_load", r.connectionsLoad);
            m.put("idle", window(r.idle));
            m.put("load", window(r.load));
            m.put("running", window(r.running));
            m.put("chatty", window(r.chatty));
            perN.put(String.valueOf(r.n), m);
        }
        detail.put("rounds", perN);
        detail.put("big_table", bigTable != null ? bigTable : Map.of("error", String.valueOf(bigTableError)));
        ObjectMapper json = new ObjectMapper();
        Files.writeString(out.resolve("fleet.json"), json.writerWithDefaultPrettyPrinter().writeValueAsString(detail) + "\n");
        List<Map<String, Object>> rows = rows();
        java.util.Set<Object> produced = new java.util.HashSet<>();
        rows.forEach(r -> produced.add(r.get("name")));
        // A run without rounds (--nodes none) replaces only the big-table rows.
        mergeResults(out.resolve("results.json"), rows,
                name -> name.startsWith("fleet_") && (!rounds.isEmpty() || produced.contains(name)));
        System.out.println("\nwrote " + out.resolve("fleet.json") + " and the fleet_* rows of " + out.resolve("results.json"));
    }

    private static Map<String, Object> window(FleetProbe.Delta d) {
        if (d == null) {
            return Map.of();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("seconds", d.seconds());
        m.put("statements_logged", d.logged());
        m.put("statements_pgss", d.calls());
        m.put("wal_bytes", d.wal());
        m.put("wal_bytes_pgss_ours", d.oursWal());
        m.put("wal_bytes_pgss_jobrunr", d.jobrunrWal());
        m.put("onboarding_calls", d.onboardingCalls());
        m.put("onboarding_rows", d.onboardingRows());
        m.put("onboarding_found_log", d.onboardingFound());
        m.put("onboarding_empty_log", d.onboardingEmpty());
        m.put("sweep_tries", d.sweepTries());
        m.put("busiest_statements", d.topCalls());
        m.put("slowest_statements_total_ms", d.topExecMs());
        return m;
    }

    /** bench/run's row shape: name, value, unit, baseline, ratio, note (ending with the goal). */
    private List<Map<String, Object>> rows() {
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Metric m : METRICS) {
            String goal = m.goal() == null ? "" : "; goal " + goalText(m);
            for (Round r : rounds.values()) {
                Double v = r.figures.get(m.key());
                if (v != null) {
                    rows.add(row("fleet_" + m.key() + "_n" + r.n, v, m.unit(), m.label().strip() + ", N = " + r.n + goal));
                }
            }
        }
        if (bigTable != null) {
            String at = String.format(Locale.ROOT, " at %,d rows", (Long) bigTable.get("rows"));
            for (String k : List.of("claim", "dashboard_watch", "listing_running", "listing_failed", "listing_cancelled_none")) {
                BigTable.Timed t = (BigTable.Timed) bigTable.get(k);
                rows.add(row("fleet_" + k + "_ms", t.ms(), "ms", k.replace('_', ' ') + at + ", EXPLAIN ANALYZE, best of 3;"
                        + " buffers " + t.buffers() + "; goal < 20 ms" + (t.ms() < 20 ? " (met)" : " (missed)")));
            }
            rows.add(row("fleet_listing_http_ms", (Double) bigTable.get("listing_http_ms"), "ms",
                    "GET /v1/executions?status=running&limit=20" + at + " through the API node, best of 3"));
        }
        return rows;
    }

    private static Map<String, Object> row(String name, double value, String unit, String note) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("name", name);
        row.put("value", Double.isNaN(value) || Double.isInfinite(value) ? null : Math.round(value * 1000) / 1000.0);
        row.put("unit", unit);
        row.put("baseline", null);
        row.put("ratio", null);
        row.put("note", note);
        return row;
    }

    /**
     * Rewrites {@code file} (a JSON list of rows) keeping the rows {@code ours} does not own and
     * adding {@code rows}: bench/run and bench/fleet each replace only their own rows.
     */
    static void mergeResults(Path file, List<Map<String, Object>> rows, java.util.function.Predicate<String> ours) throws Exception {
        ObjectMapper json = new ObjectMapper();
        List<Object> merged = new ArrayList<>();
        if (Files.exists(file)) {
            try {
                JsonNode existing = json.readTree(file.toFile());
                if (existing != null && existing.isArray()) {
                    for (JsonNode row : existing) {
                        if (!ours.test(row.path("name").asText())) {
                            merged.add(row);
                        }
                    }
                }
            } catch (Exception e) {
                Support.log("%s is not a JSON list (%s): rewriting it", file, e.getMessage());
            }
        }
        merged.addAll(rows);
        StringBuilder b = new StringBuilder("[\n");
        for (int i = 0; i < merged.size(); i++) {
            b.append("  ").append(json.writeValueAsString(merged.get(i))).append(i < merged.size() - 1 ? ",\n" : "\n");
        }
        Files.writeString(file, b.append("]\n").toString());
    }
}
