import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The fleet harness (issue 9): what one PostgreSQL pays for a fleet of N real worker JVMs (4
 * slots each, host-process sandbox so that Docker does not dominate) and one API node, for each
 * N. Per N, in this order on the same fleet (nodes are added between rounds, never restarted):
 * idle (nothing submitted), paced submits of {@code true}, K quiet running executions, one chatty
 * execution. Then, with the workers stopped, the big-table queries ({@link BigTable}). Started by
 * {@code bench/fleet}, which owns the PostgreSQL server and cleans everything up.
 */
public final class FleetBench {

    static final String ROLE = "outrun";
    static final String OWNER = "fleet";

    /** How long and how much; {@code --quick} shrinks everything for a smoke run. */
    record Config(List<Integer> nodes, int submits, double rate, int idleSeconds, int runningSeconds,
                  int chattySeconds, long rows, int settleSeconds, boolean quick) {
        static Config of(List<String> argv) {
            boolean quick = argv.contains("--quick");
            String nodes = Bench.value(argv, "--nodes", quick ? "1,4" : "1,4,12");
            List<Integer> ns;
            try {
                // "none": only the big table.
                ns = nodes.equals("none") ? List.of() : Arrays.stream(nodes.split(",")).map(String::trim)
                        .map(Integer::parseInt).sorted().distinct().toList();
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--nodes must be a list like 1,4,12 (or none), got: " + nodes);
            }
            if (ns.stream().anyMatch(n -> n < 1 || n > 50)) {
                throw new IllegalArgumentException("--nodes must be between 1 and 50 each, got: " + nodes);
            }
            return new Config(ns,
                    positive(argv, "--submits", quick ? 200 : 600), positive(argv, "--rate", 20),
                    positive(argv, "--idle-s", quick ? 10 : 30), positive(argv, "--running-s", quick ? 10 : 30),
                    positive(argv, "--chatty-s", quick ? 8 : 20), positive(argv, "--rows", quick ? 200_000 : 10_000_000),
                    quick ? 5 : 10, quick);
        }

        private static int positive(List<String> argv, String name, int fallback) {
            return Bench.positive(argv, name, fallback);
        }
    }

    private final Config config;
    private final FleetNodes nodes;
    private final FleetProbe probe;
    private final Connection db;
    private final String token;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(60)).build();
    private final ObjectMapper json = new ObjectMapper();

    private FleetBench(Config config, FleetNodes nodes, FleetProbe probe, Connection db, String token) {
        this.config = config;
        this.nodes = nodes;
        this.probe = probe;
        this.db = db;
        this.token = token;
    }

    public static void main(String[] args) throws Exception {
        List<String> argv = Arrays.asList(args);
        Config config;
        try {
            config = Config.of(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("bench/fleet: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path jar = Path.of(Bench.value(argv, "--jar", "worker/target/outrun.jar"));
        Path out = Path.of(Bench.value(argv, "--out", "bench/out"));
        String pgUrl = Bench.value(argv, "--pg-url", "jdbc:postgresql://127.0.0.1:5432/");
        Path pgLog = Path.of(Bench.value(argv, "--pg-log", "server.log"));
        Path pids = Path.of(Bench.value(argv, "--pids", out.resolve("fleet-pids").toString()));
        long started = System.nanoTime();

        FleetDatabase.create(pgUrl, ROLE);
        FleetReport report = new FleetReport(config);
        try (Connection db = FleetDatabase.connect(pgUrl);
             FleetNodes nodes = new FleetNodes(jar, out.resolve("fleet-logs"), pids, pgUrl + "outrun", ROLE)) {
            report.settings(FleetDatabase.settings(db));
            Support.log("fleet: %s; %s", report.settings(), config);
            nodes.cli("fleet-migrate", "migrate");
            String token = token(nodes.cli("fleet-token", "token", "create", "--owner", OWNER));
            nodes.startApi();
            FleetProbe probe = new FleetProbe(db, ROLE, pgLog);
            FleetBench bench = new FleetBench(config, nodes, probe, db, token);
            for (int n : config.nodes()) {
                long t0 = System.nanoTime();
                Support.log("== N = %d: starting workers", n);
                nodes.scaleTo(n);
                report.round(n, bench.round(n));
                Support.log("== N = %d took %.0f s", n, (System.nanoTime() - t0) / 1e9);
            }
            nodes.stopWorkers();
            String bigToken = token(nodes.cli("fleet-token-big", "token", "create", "--owner", BigTable.BIG_OWNER));
            try {
                // A session opened after the migrations, as the nodes' are: it has the database's
                // settings (V5 turns JIT off for Outrun's database), which the first one predates.
                try (Connection fresh = DriverManager.getConnection(pgUrl + "outrun", "postgres", "")) {
                    report.bigTable(BigTable.run(fresh, config.rows(), nodes, bigToken, probe));
                }
            } catch (Exception e) {
                Support.log("big table failed: %s", e);
                e.printStackTrace();
                report.bigTableFailed(e.toString());
            }
        }
        report.print((System.nanoTime() - started) / 1e9);
        report.write(out);
    }

    static String token(String cliOutput) {
        Matcher m = Pattern.compile("\\(shown only now[^\\n]*:\\R(\\S+)").matcher(cliOutput);
        if (!m.find()) {
            throw new IllegalStateException("no token in the output of `outrun token create`:\n" + cliOutput);
        }
        return m.group(1);
    }

    /** One round at N workers: the figures and what is behind them. */
    FleetReport.Round round(int n) throws Exception {
        FleetReport.Round r = new FleetReport.Round(n);
        Thread.sleep(config.settleSeconds() * 1000L); // start-up writes (JobRunr's server registration, migrations checks) settle

        // Idle: nothing submitted.
        vacuum();
        r.connectionsIdle = probe.connections();
        FleetProbe.Snapshot s0 = probe.snapshot();
        Thread.sleep(config.idleSeconds() * 1000L);
        FleetProbe.Delta idle = FleetProbe.delta(s0, probe.snapshot());
        r.idle = idle;
        r.put("idle_statements_per_s", idle.logged() / idle.seconds());
        r.put("idle_statements_per_s_pgss", idle.calls() / idle.seconds());
        r.put("idle_sweep_tries_per_s", idle.sweepTries() / idle.seconds());
        r.put("idle_wal_bytes_per_s_per_node", idle.wal() / idle.seconds() / n);
        Support.log("N=%d idle: %.1f statements/s (log), %.1f (pgss), %.0f WAL B/s", n, idle.logged() / idle.seconds(),
                idle.calls() / idle.seconds(), idle.wal() / idle.seconds());

        // Paced submits of `true`.
        vacuum();
        Map<String, Long> endedBefore = nodes.runsEnded();
        s0 = probe.snapshot();
        long submitStart = System.nanoTime();
        List<UUID> ids = submitPaced("true", config.submits(), config.rate());
        r.put("submit_seconds", (System.nanoTime() - submitStart) / 1e9);
        awaitEnded(ids, Duration.ofSeconds(120 + config.submits() / 5));
        FleetProbe.Delta load = FleetProbe.delta(s0, probe.snapshot());
        r.load = load;
        r.connectionsLoad = probe.connections();
        int count = ids.size();
        r.put("statements_per_execution", (double) load.logged() / count);
        r.put("statements_per_execution_pgss", (double) load.calls() / count);
        r.put("statements_per_execution_net", (load.logged() - idle.logged() / idle.seconds() * load.seconds()) / count);
        r.put("onboarding_per_execution", (double) load.onboardingCalls() / count);
        r.put("onboarding_empty_share_pct", 100 * load.onboardingEmptyShare());
        r.put("wal_bytes_per_execution", (load.wal() - idle.wal() / idle.seconds() * load.seconds()) / count);
        Map<String, Long> endedAfter = nodes.runsEnded();
        endedAfter.replaceAll((node, v) -> v - endedBefore.getOrDefault(node, 0L));
        r.executionsPerNode = endedAfter;
        r.put("executions_per_node_min", endedAfter.values().stream().mapToLong(Long::longValue).min().orElse(0));
        r.put("executions_per_node_max", endedAfter.values().stream().mapToLong(Long::longValue).max().orElse(0));
        int workerConns = 0;
        for (FleetNodes.Node w : nodes.workers()) {
            workerConns += r.connectionsLoad.getOrDefault("outrun-" + w.name(), 0);
        }
        // Listeners are all named outrun-listener: one per node, the API node's included.
        int listeners = r.connectionsLoad.getOrDefault("outrun-listener", 0);
        r.put("connections_per_worker", (workerConns + Math.max(0, listeners - 1)) / (double) n);
        r.put("connections_total_idle", r.connectionsIdle.values().stream().mapToInt(Integer::intValue).sum());
        r.put("connections_total_after_load", r.connectionsLoad.values().stream().mapToInt(Integer::intValue).sum());
        Support.log("N=%d load: %d executions in %.1f s, %.1f statements each (log), %.2f onboardings (%.0f%% empty)", n, count,
                load.seconds(), (double) load.logged() / count, (double) load.onboardingCalls() / count,
                100 * load.onboardingEmptyShare());

        // K quiet running executions.
        int k = Math.min(8, 4 * n);
        List<UUID> sleepers = new ArrayList<>();
        for (int i = 0; i < k; i++) {
            sleepers.add(submit("sleep 600"));
        }
        Support.await(k + " running", Duration.ofSeconds(60), 100, () -> count(FleetSql.RUNNING_COUNT, sleepers) == k);
        vacuum();
        Thread.sleep(3000); // past the first renewal of each lease
        s0 = probe.snapshot();
        Thread.sleep(config.runningSeconds() * 1000L);
        FleetProbe.Delta running = FleetProbe.delta(s0, probe.snapshot());
        r.running = running;
        double perExecSeconds = running.seconds() * k;
        double idleScale = running.seconds() / idle.seconds();
        r.put("running_executions", k);
        r.put("running_statements_per_s_per_execution", (running.logged() - idle.logged() * idleScale) / perExecSeconds);
        r.put("running_wal_bytes_per_s_per_execution", (running.wal() - idle.wal() * idleScale) / perExecSeconds);
        r.put("lease_wal_bytes_per_s_per_execution", (running.oursWal() - idle.oursWal() * idleScale) / perExecSeconds);
        r.put("jobrunr_wal_bytes_per_s_per_execution", (running.jobrunrWal() - idle.jobrunrWal() * idleScale) / perExecSeconds);
        for (UUID id : sleepers) {
            cancel(id);
        }
        awaitEnded(sleepers, Duration.ofSeconds(60));

        // One chatty execution: random (incompressible) output, paced, under the default cap.
        vacuum();
        String chatty = "for i in $(seq 1 " + config.chattySeconds() + "); do head -c 30000 /dev/urandom | base64 -w 100; sleep 1; done";
        s0 = probe.snapshot();
        UUID id = submit(chatty);
        awaitEnded(List.of(id), Duration.ofSeconds(config.chattySeconds() + 120L));
        FleetProbe.Delta loud = FleetProbe.delta(s0, probe.snapshot());
        r.chatty = loud;
        // Through the API, so that where output is stored does not matter here.
        JsonNode view = json.readTree(http.send(HttpRequest.newBuilder(nodes.api("/v1/executions/" + id))
                .timeout(Duration.ofSeconds(60)).header("Authorization", "Bearer " + token).GET().build(),
                HttpResponse.BodyHandlers.ofString()).body());
        long bytes = view.path("stdout").path("totalBytes").asLong() + view.path("stderr").path("totalBytes").asLong();
        if (!"succeeded".equals(view.path("status").asText())) {
            Support.log("N=%d chatty run ended %s", n, view.path("status").asText());
        }
        double chattyIdleScale = loud.seconds() / idle.seconds();
        r.put("chatty_output_bytes", bytes);
        r.put("chatty_wal_per_output_byte", (loud.wal() - idle.wal() * chattyIdleScale) / bytes);
        r.put("chatty_ours_wal_per_output_byte", (loud.oursWal() - idle.oursWal() * chattyIdleScale) / bytes);
        Support.log("N=%d chatty: %d output bytes, %.1f WAL bytes per output byte", n, bytes,
                (loud.wal() - idle.wal() * chattyIdleScale) / bytes);
        return r;
    }

    private void vacuum() throws Exception {
        FleetDatabase.vacuum(db);
    }

    /**
     * Submits {@code count} executions at {@code perSecond}, each from one of a few sender threads
     * (each POST waits for its answer, so connections are reused and never pile up on a
     * CPU-starved API node). When the API node falls behind, submits queue and the rate drops:
     * {@code submit_seconds} shows it.
     */
    private List<UUID> submitPaced(String command, int count, double perSecond) throws Exception {
        java.util.concurrent.ExecutorService senders = java.util.concurrent.Executors.newFixedThreadPool(16);
        try {
            List<java.util.concurrent.Future<UUID>> sent = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int i = 0; i < count; i++) {
                long due = t0 + (long) (i * 1e9 / perSecond);
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                sent.add(senders.submit(() -> submit(command)));
            }
            List<UUID> ids = new ArrayList<>();
            for (java.util.concurrent.Future<UUID> f : sent) {
                ids.add(f.get());
            }
            return ids;
        } finally {
            senders.shutdownNow();
        }
    }

    private UUID submit(String command) throws Exception {
        for (int attempt = 1; ; attempt++) {
            try {
                HttpResponse<String> response = http.send(submitRequest(command), HttpResponse.BodyHandlers.ofString());
                // A starved API node may answer 503 (not accepted): send it again.
                for (int retry = 0; response.statusCode() == 503 && retry < 20; retry++) {
                    Thread.sleep(1000);
                    response = http.send(submitRequest(command), HttpResponse.BodyHandlers.ofString());
                }
                return executionId(response);
            } catch (java.net.http.HttpConnectTimeoutException e) {
                // A starved API node accepts late; without an answer nothing was submitted, so try again.
                if (attempt == 3) {
                    throw e;
                }
            }
        }
    }

    private HttpRequest submitRequest(String command) throws Exception {
        return HttpRequest.newBuilder(nodes.api("/v1/executions")).timeout(Duration.ofSeconds(180))
                .header("Authorization", "Bearer " + token).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json.writeValueAsString(Map.of("command", command)))).build();
    }

    private UUID executionId(HttpResponse<String> response) throws Exception {
        if (response.statusCode() / 100 != 2) {
            throw new IllegalStateException("submit answered " + response.statusCode() + ": " + response.body());
        }
        JsonNode body = json.readTree(response.body());
        return UUID.fromString(body.path("executionId").asText());
    }

    private void cancel(UUID id) throws Exception {
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(nodes.api("/v1/executions/" + id + "/cancel"))
                .timeout(Duration.ofSeconds(30)).header("Authorization", "Bearer " + token)
                .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() / 100 != 2 && response.statusCode() != 409) {
            throw new IllegalStateException("cancel answered " + response.statusCode() + ": " + response.body());
        }
    }

    private void awaitEnded(List<UUID> ids, Duration within) throws Exception {
        Support.await(ids.size() + " executions to end", within, 200, () -> count(FleetSql.ENDED_COUNT, ids) == ids.size());
    }

    private long count(String sql, List<UUID> ids) throws Exception {
        try (PreparedStatement ps = db.prepareStatement(sql)) {
            Array array = db.createArrayOf("uuid", ids.toArray());
            ps.setArray(1, array);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
