import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.api.auth.TokenStore;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Schedules at fleet scale (issue 45), measured: one PostgreSQL 15, an API node and real worker
 * JVMs (bench/pg15.sh, {@link FleetNodes}); the fleet's statements/s idle with no schedule, then N
 * schedules of M owners made through {@code POST /v1/schedules} ({@link ScheduleMix}), then the
 * statements/s over a window of K minutes of firings, and after it, from the database, what
 * fired and when ({@link ScheduleFirings}). Started by {@code bench/schedules}, which owns the
 * server and cleans everything up. Writes {@code schedules.json}.
 */
public final class ScheduleBench {

    static final String ROLE = "outrun";

    /**
     * Sizes and durations. A period is the longest in the mix (60 s): a window of K periods sees
     * every schedule fire at least K times.
     */
    record Config(int schedules, int owners, double periods, int workers, int idleSeconds, int graceSeconds, boolean quick) {
        static Config of(List<String> argv) {
            boolean quick = argv.contains("--quick");
            String p = Bench.value(argv, "--periods", quick ? "1.5" : "5");
            double periods;
            try {
                periods = Double.parseDouble(p);
            } catch (NumberFormatException e) {
                periods = -1;
            }
            if (!(periods > 0 && periods <= 60)) {
                throw new IllegalArgumentException("--periods must be a number of minutes above 0 (at most 60), got: " + p);
            }
            Config c = new Config(Bench.positive(argv, "--schedules", quick ? 1_000 : 10_000),
                    Bench.positive(argv, "--owners", quick ? 20 : 100), periods,
                    Bench.positive(argv, "--workers", quick ? 2 : 4), Bench.positive(argv, "--idle-s", quick ? 10 : 30),
                    // Past the window: two JobRunr polls and a firings pass, so that a firing due just
                    // before the measured range's end has had its execution made before it is read.
                    12, quick);
            ScheduleMix.of(c.schedules(), c.owners()); // refuses more than an owner may keep
            return c;
        }

        Duration window() {
            return Duration.ofMillis((long) (periods * ScheduleMix.LONGEST_PERIOD_MS));
        }
    }

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(60)).build();
    private final ObjectMapper json = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        List<String> argv = Arrays.asList(args);
        Config config;
        try {
            config = Config.of(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("bench/schedules: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path jar = Path.of(Bench.value(argv, "--jar", "worker/target/outrun.jar"));
        Path out = Path.of(Bench.value(argv, "--out", "bench/out"));
        String pgUrl = Bench.value(argv, "--pg-url", "jdbc:postgresql://127.0.0.1:5432/");
        Path pgLog = Path.of(Bench.value(argv, "--pg-log", "server.log"));
        Path pids = Path.of(Bench.value(argv, "--pids", out.resolve("schedules-pids").toString()));
        long started = System.nanoTime();
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("schedules", config.schedules());
        report.put("owners", config.owners());

        FleetDatabase.create(pgUrl, ROLE);
        try (Connection db = FleetDatabase.connect(pgUrl);
             FleetNodes nodes = new FleetNodes(jar, out.resolve("schedules-logs"), pids, pgUrl + "outrun", ROLE)) {
            String settings = FleetDatabase.settings(db);
            Support.log("schedules: %s; %s", settings, config);
            nodes.cli("sched-migrate", "migrate");
            List<ScheduleMix.Spec> specs = ScheduleMix.of(config.schedules(), config.owners());
            Map<String, String> tokens = tokens(pgUrl, config.owners());
            nodes.startApi();
            nodes.scaleTo(config.workers());
            Support.log("fleet up after %.0f s: API node and %d workers", (System.nanoTime() - started) / 1e9, config.workers());
            Thread.sleep(3000); // start-up writes (JobRunr's server registration) settle
            FleetProbe probe = new FleetProbe(db, ROLE, pgLog);

            // Idle: the fleet with no schedule at all.
            FleetDatabase.vacuum(db);
            FleetProbe.Snapshot s0 = probe.snapshot();
            Thread.sleep(config.idleSeconds() * 1000L);
            FleetProbe.Delta idle = FleetProbe.delta(s0, probe.snapshot());
            double idleRate = idle.calls() / idle.seconds();
            Support.log("idle, no schedules: %.1f statements/s (pgss), %.1f (log)", idleRate, idle.logged() / idle.seconds());

            long t0 = System.nanoTime();
            new ScheduleBench().create(specs, tokens, nodes);
            double createSeconds = (System.nanoTime() - t0) / 1e9;
            Support.log("made %d schedules of %d owners in %.1f s", specs.size(), config.owners(), createSeconds);

            // The window: the schedules fire.
            FleetDatabase.vacuum(db);
            Instant from = ScheduleFirings.now(db);
            s0 = probe.snapshot();
            Thread.sleep(config.window().toMillis());
            FleetProbe.Delta window = FleetProbe.delta(s0, probe.snapshot());
            Instant to = ScheduleFirings.now(db);
            Support.log("window of %.0f s: %.1f statements/s (pgss); waiting %d s for the last firings", window.seconds(),
                    window.calls() / window.seconds(), config.graceSeconds());
            Thread.sleep(config.graceSeconds() * 1000L);

            Map<String, Object> firings = ScheduleFirings.measure(db, from, to);
            long made = (Long) firings.get("firings_made_in_window");
            double windowRate = window.calls() / window.seconds();
            report.put("firings_expected", firings.get("firings_expected"));
            report.put("firings_missed", firings.get("firings_missed"));
            report.put("firings_skipped_by_overlap", firings.get("firings_skipped_by_overlap"));
            report.put("firings_doubled", firings.get("firings_doubled"));
            report.put("late_p50_ms", firings.get("late_p50_ms"));
            report.put("late_p99_ms", firings.get("late_p99_ms"));
            // What the schedules cost: the window's statements less what the same fleet does idle.
            report.put("statements_per_firing", made == 0 ? Double.NaN : (window.calls() - idleRate * window.seconds()) / made);
            report.put("statements_per_firing_log", made == 0 ? Double.NaN
                    : (window.logged() - idle.logged() / idle.seconds() * window.seconds()) / made);
            report.put("idle_statements_per_s", idleRate);
            report.put("window_statements_per_s", windowRate);
            report.put("idle_statements_per_s_log", idle.logged() / idle.seconds());
            report.put("window_statements_per_s_log", window.logged() / window.seconds());
            report.put("engine", firings.get("engine"));
            report.put("firings_per_s_asked", ScheduleMix.firingsPerSecond(config.schedules()));
            report.put("firings_per_s_made", made / window.seconds());
            report.put("window_seconds", window.seconds());
            report.put("idle_seconds", idle.seconds());
            report.put("create_seconds", createSeconds);
            report.put("workers", config.workers());
            report.put("quick", config.quick());
            report.put("settings", settings);
            firings.forEach(report::putIfAbsent);
            report.put("window_top_statements", window.topCalls());
            report.put("window_slowest_statements_total_ms", window.topExecMs());
            report.put("idle_top_statements", idle.topCalls());
            report.put("wall_seconds", (System.nanoTime() - started) / 1e9);
        }
        print(report);
        Files.createDirectories(out);
        Path file = out.resolve("schedules.json");
        Files.writeString(file, new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(report) + "\n");
        System.out.println("\nwrote " + file);
    }

    /** One token per owner, straight in the database as {@code outrun token create} makes them (one JVM each would take minutes). */
    private static Map<String, String> tokens(String pgUrl, int owners) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(pgUrl + "outrun");
        ds.setUser("postgres");
        TokenStore store = new TokenStore(ds);
        Map<String, String> tokens = new LinkedHashMap<>();
        for (int i = 0; i < owners; i++) {
            tokens.put(ScheduleMix.owner(i), store.create(ScheduleMix.owner(i)).token());
        }
        return tokens;
    }

    /** Makes every schedule through the API node, a few at a time; any answer but 201 stops the run. */
    private void create(List<ScheduleMix.Spec> specs, Map<String, String> tokens, FleetNodes nodes) throws Exception {
        ExecutorService senders = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> sent = new ArrayList<>();
            for (ScheduleMix.Spec s : specs) {
                sent.add(senders.submit(() -> {
                    HttpRequest request = HttpRequest.newBuilder(nodes.api("/v1/schedules")).timeout(Duration.ofSeconds(120))
                            .header("Authorization", "Bearer " + tokens.get(s.owner())).header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(json.writeValueAsString(s.body()))).build();
                    HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
                    for (int retry = 0; response.statusCode() == 503 && retry < 20; retry++) {
                        Thread.sleep(1000); // a starved API node may answer 503: send it again
                        response = http.send(request, HttpResponse.BodyHandlers.ofString());
                    }
                    if (response.statusCode() != 201) {
                        throw new IllegalStateException("POST /v1/schedules " + s.name() + " of " + s.owner() + " answered "
                                + response.statusCode() + ": " + response.body());
                    }
                    return null;
                }));
            }
            for (Future<?> f : sent) {
                f.get();
            }
        } finally {
            senders.shutdownNow();
        }
    }

    private static void print(Map<String, Object> r) {
        System.out.printf(Locale.ROOT, "%nOutrun schedules at fleet scale (%s, %.0f s wall; %s; %d cores)%n",
                Boolean.TRUE.equals(r.get("quick")) ? "quick" : "full", (Double) r.get("wall_seconds"), r.get("settings"),
                Runtime.getRuntime().availableProcessors());
        System.out.printf(Locale.ROOT, "%s schedules of %s owners (`true`, overlap skip), %s workers; engine: %s%n%n",
                r.get("schedules"), r.get("owners"), r.get("workers"), r.get("engine"));
        String[][] rows = {
                {"schedules made in (s)", "create_seconds"},
                {"window (s)", "window_seconds"},
                {"firings asked per s (mix average)", "firings_per_s_asked"},
                {"firings made per s (executions in window)", "firings_per_s_made"},
                {"firings expected (due in measured range)", "firings_expected"},
                {"firings missed", "firings_missed"},
                {"firings skipped, previous run not ended (overlap skip)", "firings_skipped_by_overlap"},
                {"firings doubled", "firings_doubled"},
                {"firings unexpected (no due time matched)", "firings_unexpected"},
                {"late p50 (ms, execution created - due)", "late_p50_ms"},
                {"late p99 (ms)", "late_p99_ms"},
                {"late max (ms)", "late_max_ms"},
                {"skipped by overlap (since made)", "schedules_skipped_total"},
                {"statements per firing (pgss, idle subtracted)", "statements_per_firing"},
                {"  same, server log (with COMMITs)", "statements_per_firing_log"},
                {"idle statements/s, no schedules (pgss)", "idle_statements_per_s"},
                {"window statements/s (pgss)", "window_statements_per_s"},
                {"idle statements/s (log)", "idle_statements_per_s_log"},
                {"window statements/s (log)", "window_statements_per_s_log"},
                {"JobRunr firing jobs due in range", "jobrunr_firing_jobs_in_range"},
                {"  of them not ended when read", "jobrunr_firing_jobs_open_at_read"},
        };
        for (String[] row : rows) {
            Object v = r.get(row[1]);
            String text = v instanceof Double d ? (Double.isNaN(d) ? "n/a" : String.format(Locale.ROOT, "%,.1f", d))
                    : v instanceof Number n ? String.format(Locale.ROOT, "%,d", n.longValue()) : String.valueOf(v);
            System.out.printf(Locale.ROOT, "| %-48s | %12s |%n", row[0], text);
        }
    }
}
