import io.outrun.auth.TokenStore;
import io.outrun.http.ApiConfig;
import io.outrun.http.ApiNode;
import io.outrun.service.Core;
import io.outrun.store.DatabaseConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Enqueue rate: 16 client threads, each with its own HTTP client, POST /v1/executions with a
 * bearer token to an API node on 127.0.0.1 (default settings, its own pool of 6), as fast as
 * they can for a fixed time after a warm-up. No worker runs: rows stay queued. Baseline: 16
 * threads, each on its own JDBC connection, inserting the same row into {@code executions}.
 */
final class EnqueueBench {

    static final int CLIENTS = 16;
    static final String BODY = "{\"command\":\"true\"}";

    static List<Support.Result> run(Support.Pg pg, Duration warmup, Duration measure) throws Exception {
        DatabaseConfig db = pg.fresh("bench_enqueue");
        Load http;
        // -Dbench.apiPoolSize=N: a diagnosis knob (the default is the node's default pool).
        DatabaseConfig apiDb = new DatabaseConfig(db.url(), db.user(), db.password(),
                Integer.getInteger("bench.apiPoolSize", DatabaseConfig.DEFAULT_POOL_SIZE));
        try (Core core = Core.open(apiDb, "bench-api", Duration.ofSeconds(15));
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "bench")) {
            String token = new TokenStore(core.pool()).create("bench").token();
            URI uri = URI.create("http://127.0.0.1:" + api.port() + "/v1/executions");
            http = load(warmup, measure, () -> {
                HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                        .connectTimeout(Duration.ofSeconds(5)).build();
                HttpRequest request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30))
                        .header("Authorization", "Bearer " + token).header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(BODY)).build();
                return () -> {
                    HttpResponse<String> r = client.send(request, HttpResponse.BodyHandlers.ofString());
                    if (r.statusCode() != 202) {
                        throw new IllegalStateException("POST /v1/executions answered " + r.statusCode() + ": " + r.body());
                    }
                };
            });
        }
        Load jdbc = load(warmup, measure, () -> {
            Connection c = Support.connect(db);
            PreparedStatement ps = c.prepareStatement("INSERT INTO executions (id, owner, command, image, workdir, env,"
                    + " labels, timeout_ms, max_output_bytes, max_attempts, idempotency_key)"
                    + " VALUES (?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, ?, ?)");
            return () -> {
                ps.setObject(1, UUID.randomUUID());
                ps.setString(2, "bench");
                ps.setString(3, "true");
                ps.setString(4, null);
                ps.setString(5, null);
                ps.setString(6, "{}");
                ps.setString(7, "{}");
                ps.setLong(8, 600_000L);
                ps.setInt(9, 1 << 20);
                ps.setInt(10, 3);
                ps.setString(11, null);
                ps.executeUpdate();
            };
        });
        Support.log("enqueue: HTTP %.0f/s p99 %.1f ms, %.2f JVM CPU ms/req; JDBC %.0f/s p99 %.1f ms, %.2f JVM CPU ms/insert",
                http.rate, http.p99Ms, http.cpuMsPerCall, jdbc.rate, jdbc.p99Ms, jdbc.cpuMsPerCall);
        String note = CLIENTS + " clients on loopback, " + measure.toSeconds() + " s after " + warmup.toSeconds()
                + " s warm-up; baseline: plain JDBC INSERT of the same row, 16 connections";
        return List.of(
                Support.Result.of("enqueue_per_s", http.rate, "req/s", jdbc.rate, ">= 1000/s", http.rate >= 1000, note),
                Support.Result.of("enqueue_p99_ms", http.p99Ms, "ms", jdbc.p99Ms, "(reference)", null,
                        String.format(java.util.Locale.ROOT, "p99 latency of the same runs (p50 %.1f ms); bench JVM CPU"
                                + " (API server + clients) %.2f ms per request", http.p50Ms, http.cpuMsPerCall)));
    }

    interface Call {
        void call() throws Exception;
    }

    interface CallFactory {
        Call open() throws Exception;
    }

    record Load(double rate, double p50Ms, double p99Ms, double cpuMsPerCall) {
    }

    static Load load(Duration warmup, Duration measure, CallFactory factory) throws Exception {
        AtomicBoolean recording = new AtomicBoolean();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong done = new AtomicLong();
        Map<Integer, List<Long>> latencies = new ConcurrentHashMap<>();
        List<Throwable> errors = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < CLIENTS; t++) {
            int index = t;
            Call call = factory.open();
            List<Long> mine = new ArrayList<>();
            latencies.put(index, mine);
            Thread thread = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        long start = System.nanoTime();
                        call.call();
                        if (recording.get()) {
                            mine.add(System.nanoTime() - start);
                            done.incrementAndGet();
                        }
                    }
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            }, "bench-client-" + t);
            threads.add(thread);
        }
        threads.forEach(Thread::start);
        Thread.sleep(warmup.toMillis());
        var os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long cpuStart = os.getProcessCpuTime();
        recording.set(true);
        long start = System.nanoTime();
        Thread.sleep(measure.toMillis());
        recording.set(false);
        long elapsed = System.nanoTime() - start;
        long count = done.get();
        long cpu = os.getProcessCpuTime() - cpuStart;
        stop.set(true);
        for (Thread t : threads) {
            t.join(60_000);
        }
        if (!errors.isEmpty()) {
            throw new IllegalStateException("load failed: " + errors.get(0), errors.get(0));
        }
        List<Long> all = new ArrayList<>();
        latencies.values().forEach(all::addAll);
        return new Load(count / (elapsed / 1e9), Support.median(all) / 1e6, Support.percentile(all, 0.99) / 1e6,
                cpu / 1e6 / Math.max(1, count));
    }
}
