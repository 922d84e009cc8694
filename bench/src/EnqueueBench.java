import io.outrun.api.auth.TokenStore;
import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
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
 * Enqueue rate: 16 client threads POST /v1/executions with a
 * bearer token to an API node on 127.0.0.1 (default settings, its own pool of 6), as fast as
 * they can for a fixed time after a warm-up, each on one keep-alive connection. No worker runs: rows stay queued. Baseline: 16
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
        try (Core core = Core.open(apiDb, "bench-api");
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "bench")) {
            String token = new TokenStore(core.pool()).create("bench").token();
            // The load generator shares the 2 cores with the server and PostgreSQL: a minimal
            // keep-alive HTTP/1.1 client (one socket per thread) instead of the JDK's HttpClient,
            // whose selector and async machinery cost about a third of this JVM's CPU.
            String request = "POST /v1/executions HTTP/1.1\r\nHost: 127.0.0.1:" + api.port() + "\r\nAuthorization: Bearer "
                    + token + "\r\nContent-Type: application/json\r\nContent-Length: " + BODY.length() + "\r\n\r\n" + BODY;
            http = load(warmup, measure, () -> new KeepAliveClient(api.port(), request.getBytes(StandardCharsets.US_ASCII))::post);
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
                Support.Result.of("enqueue_per_s", http.rate, "req/s", jdbc.rate, "ratio >= 0.5",
                        http.rate >= 0.5 * jdbc.rate, note),
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
        return load(CLIENTS, warmup, measure, factory);
    }

    /** {@code clients} threads calling as fast as they can; the rate is of calls (a batch is one). */
    static Load load(int clients, Duration warmup, Duration measure, CallFactory factory) throws Exception {
        AtomicBoolean recording = new AtomicBoolean();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong done = new AtomicLong();
        Map<Integer, List<Long>> latencies = new ConcurrentHashMap<>();
        List<Throwable> errors = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < clients; t++) {
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

    /**
     * One keep-alive HTTP/1.1 connection that sends the same request and reads each answer whole
     * (status line, headers, a Content-Length body; the API never chunks a JSON answer).
     */
    static final class KeepAliveClient {
        private final OutputStream out;
        private final InputStream in;
        private final byte[] request;
        private final String expected;

        KeepAliveClient(int port, byte[] request) throws IOException {
            this(port, request, "HTTP/1.1 202");
        }

        /** Each answer's status line must start with {@code expected}. */
        KeepAliveClient(int port, byte[] request, String expected) throws IOException {
            Socket socket = new Socket("127.0.0.1", port);
            socket.setTcpNoDelay(true);
            this.out = socket.getOutputStream();
            this.in = new BufferedInputStream(socket.getInputStream(), 16 * 1024);
            this.request = request;
            this.expected = expected;
        }

        void post() throws IOException {
            out.write(request);
            out.flush();
            String status = line();
            if (!status.startsWith(expected)) {
                throw new IllegalStateException("the POST answered " + status);
            }
            int length = -1;
            boolean chunked = false;
            for (String header; !(header = line()).isEmpty(); ) {
                if (header.regionMatches(true, 0, "Content-Length:", 0, 15)) {
                    length = Integer.parseInt(header.substring(15).trim());
                } else if (header.regionMatches(true, 0, "Transfer-Encoding:", 0, 18)) {
                    chunked = header.substring(18).trim().equalsIgnoreCase("chunked");
                }
            }
            if (chunked) {
                // A large answer (a batch's) is sent in chunks: size line, bytes, CRLF; a 0 ends it.
                for (int size; (size = Integer.parseInt(line().split(";", 2)[0].trim(), 16)) > 0; ) {
                    in.skipNBytes(size);
                    line();
                }
                while (!line().isEmpty()) {
                    // trailers, if any
                }
                return;
            }
            if (length < 0) {
                throw new IllegalStateException("an answer without Content-Length");
            }
            in.skipNBytes(length);
        }

        private String line() throws IOException {
            StringBuilder b = new StringBuilder();
            for (int c; (c = in.read()) != '\n'; ) {
                if (c < 0) {
                    throw new IOException("connection closed by the server");
                }
                if (c != '\r') {
                    b.append((char) c);
                }
            }
            return b.toString();
        }
    }
}
