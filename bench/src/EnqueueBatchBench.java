import io.outrun.api.auth.TokenStore;
import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.core.owner.OwnerLimits;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * Batch enqueue rate: {@link #CLIENTS} client threads POST /v1/executions/batch with
 * {@link #BATCH} submissions each (`{"command":"true"}`) to an API node on 127.0.0.1, each on one
 * keep-alive connection, as fast as they can after a warm-up; the figure is submissions per
 * second. No worker runs. Baseline: as many threads, each on its own JDBC connection, sending
 * one plain multi-row INSERT of the same {@link #BATCH} rows (one statement, one transaction).
 */
final class EnqueueBatchBench {

    static final int CLIENTS = 2;
    static final int BATCH = 1000;

    static List<Support.Result> run(Support.Pg pg, Duration warmup, Duration measure) throws Exception {
        DatabaseConfig db = pg.fresh("bench_enqueue_batch");
        StringBuilder body = new StringBuilder("{\"submissions\":[");
        for (int i = 0; i < BATCH; i++) {
            body.append(i == 0 ? "" : ",").append(EnqueueBench.BODY);
        }
        byte[] json = body.append("]}").toString().getBytes(StandardCharsets.UTF_8);
        EnqueueBench.Load http;
        // Past the default queued cap (100,000) in seconds otherwise: the cap is not what is measured.
        try (Core core = Core.open(db, "bench-api", OwnerLimits.of(0, Integer.MAX_VALUE));
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "bench")) {
            String token = new TokenStore(core.pool()).create("bench").token();
            byte[] head = ("POST /v1/executions/batch HTTP/1.1\r\nHost: 127.0.0.1:" + api.port() + "\r\nAuthorization: Bearer "
                    + token + "\r\nContent-Type: application/json\r\nContent-Length: " + json.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII);
            byte[] request = new byte[head.length + json.length];
            System.arraycopy(head, 0, request, 0, head.length);
            System.arraycopy(json, 0, request, head.length, json.length);
            http = EnqueueBench.load(CLIENTS, warmup, measure,
                    () -> new EnqueueBench.KeepAliveClient(api.port(), request, "HTTP/1.1 200")::post);
        }
        StringBuilder sql = new StringBuilder("INSERT INTO executions (id, owner, command, image, workdir, env, labels,"
                + " timeout_ms, max_output_bytes, max_attempts, idempotency_key) VALUES ");
        for (int i = 0; i < BATCH; i++) {
            sql.append(i == 0 ? "" : ", ").append("(?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, ?, ?)");
        }
        EnqueueBench.Load jdbc = EnqueueBench.load(CLIENTS, warmup, measure, () -> {
            Connection c = Support.connect(db);
            PreparedStatement ps = c.prepareStatement(sql.toString());
            return () -> {
                int p = 1;
                for (int i = 0; i < BATCH; i++) {
                    ps.setObject(p++, UUID.randomUUID());
                    ps.setString(p++, "bench");
                    ps.setString(p++, "true");
                    ps.setString(p++, null);
                    ps.setString(p++, null);
                    ps.setString(p++, "{}");
                    ps.setString(p++, "{}");
                    ps.setLong(p++, 600_000L);
                    ps.setInt(p++, 1 << 20);
                    ps.setInt(p++, 3);
                    ps.setString(p++, null);
                }
                ps.executeUpdate();
            };
        });
        double ours = http.rate() * BATCH;
        double base = jdbc.rate() * BATCH;
        Support.log("enqueue_batch: HTTP %.0f submissions/s (p50 %.0f ms per batch), %.2f JVM CPU ms/batch;"
                + " JDBC %.0f rows/s (p50 %.0f ms per INSERT)", ours, http.p50Ms(), http.cpuMsPerCall(), base, jdbc.p50Ms());
        String note = String.format(Locale.ROOT, "%d clients, %d submissions per POST /v1/executions/batch, %d s after %d s"
                + " warm-up; p50 %.0f ms per batch, bench JVM CPU %.1f ms per batch; baseline: one plain JDBC multi-row"
                + " INSERT of the same %d rows per statement, %d connections (p50 %.0f ms)", CLIENTS, BATCH,
                measure.toSeconds(), warmup.toSeconds(), http.p50Ms(), http.cpuMsPerCall(), BATCH, CLIENTS, jdbc.p50Ms());
        return List.of(Support.Result.of("enqueue_batch_per_s", ours, "submissions/s", base, "ratio >= 0.5",
                ours >= 0.5 * base, note));
    }
}
