package io.outrun.core.store;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Lineage;
import io.outrun.core.execution.Progress;
import io.outrun.core.execution.Resources;
import io.outrun.core.execution.Retry;
import io.outrun.core.execution.StdinState;
import io.outrun.core.execution.Webhook;
import io.outrun.core.trace.TraceContext;
import io.outrun.model.inputs.StdinMode;
import io.outrun.model.output.Captured;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * How an {@code executions} row is read, shared by the stores that split that table between
 * them: one column list and one mapper, so that a row reads the same whichever statement
 * returned it. Also the few lines of JDBC plumbing they all repeat.
 */
public final class ExecutionRows {

    static final ObjectMapper JSON = new ObjectMapper();
    private static final TypeReference<Map<String, String>> STRING_MAP = new TypeReference<>() { };

    /** Seconds a worker's own write may take before it is cancelled (the database answers or not). */
    public static final int WRITE_TIMEOUT_S = 10;

    private ExecutionRows() {
    }

    /** Runs an update and returns its row count. */
    public static int update(DataSource dataSource, NamedSql sql, NamedSql.Args args) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = sql.prepare(c, args)) {
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw new StoreException("update failed: " + sql.firstWords(), e);
        }
    }

    /** The one-column, one-row answer of a yes/no query. */
    static boolean exists(DataSource dataSource, NamedSql sql, NamedSql.Args args, String what) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = sql.prepare(c, args);
             ResultSet rs = ps.executeQuery()) {
            return rs.next() && rs.getBoolean(1);
        } catch (SQLException e) {
            throw new StoreException("cannot tell " + what, e);
        }
    }

    /**
     * One execution as read by {@code sql} (one of the READ statements above), with the output
     * {@code read} asks for; {@code what} names it in an error.
     */
    static Optional<Execution> read(DataSource dataSource, NamedSql sql, OutputStore.Read read, NamedSql.Args args,
                                    Object what) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = sql.prepare(c, args)) {
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                return Optional.of(map(rs, (id, epoch, max, out, err) -> OutputStore.read(c, id, epoch, max, out, err, read)));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot read execution " + what, e);
        }
    }

    @FunctionalInterface
    public interface OutputLoader {
        Captured[] load(UUID id, long epoch, int maxOutputBytes, long stdoutTotal, long stderrTotal) throws SQLException;
    }

    /** The execution in the current row; its output is loaded by {@code output}, or left empty when null. */
    public static Execution map(ResultSet rs, OutputLoader output) throws SQLException {
        UUID id = rs.getObject("id", UUID.class);
        ExecutionStatus status = ExecutionStatus.fromWire(rs.getString("status"));
        int max = rs.getInt("max_output_bytes");
        long outputEpoch = rs.getLong("output_epoch");
        // Byte counts: written at the end of an attempt; while it runs, how far its stored output reaches.
        long outTotal = Math.max(rs.getLong("stdout_total_bytes"), rs.getLong("stdout_end"));
        long errTotal = Math.max(rs.getLong("stderr_total_bytes"), rs.getLong("stderr_end"));
        Captured[] streams = output == null
                ? new Captured[] {new Captured(new byte[0], new byte[0], outTotal), new Captured(new byte[0], new byte[0], errTotal)}
                : null;
        Execution e = Execution.builder()
                .id(id)
                .owner(rs.getString("owner"))
                .command(rs.getString("command"))
                .image(rs.getString("image"))
                .workdir(rs.getString("workdir"))
                .env(parse(rs.getString("env_json")))
                .labels(parse(rs.getString("labels_json")))
                .timeoutMs(rs.getLong("timeout_ms"))
                .maxOutputBytes(max)
                .status(status)
                .attempt(rs.getInt("attempt"))
                .maxAttempts(rs.getInt("max_attempts"))
                .leaseHolder(rs.getString("lease_owner"))
                .leaseEpoch(rs.getLong("lease_epoch"))
                .outputEpoch(outputEpoch)
                .leaseExpiresAt(instant(rs, "lease_expires_at"))
                .cancelRequested(rs.getTimestamp("cancel_requested_at") != null)
                .idempotencyKey(rs.getString("idempotency_key"))
                .bookSeq(rs.getInt("dispatch_seq"))
                .jobId(rs.getObject("job_id", UUID.class))
                .enqueuedAt(instant(rs, "enqueued_at"))
                .createdAt(instant(rs, "created_at"))
                .startedAt(instant(rs, "started_at"))
                .finishedAt(instant(rs, "finished_at"))
                .exitCode((Integer) rs.getObject("exit_code"))
                .errorCode(rs.getString("error_code"))
                .errorMessage(rs.getString("error_message"))
                .stdout(streams == null ? null : streams[0])
                .stderr(streams == null ? null : streams[1])
                .stdin(stdin(rs))
                .resources(resources(rs))
                .startsAt(instant(rs, "starts_at"))
                .retry(retry(rs))
                .webhook(webhook(rs.getString("webhook_json")))
                .trace(TraceContext.parse(rs.getString("traceparent"), rs.getString("tracestate")))
                .lineage(new Lineage(rs.getObject("parent_id", UUID.class), rs.getInt("depth"),
                        rs.getBoolean("cancel_with_parent")))
                .identityAudience(rs.getString("identity_audience"))
                .progress(progress(rs))
                .build();
        if (output == null) {
            return e;
        }
        Captured[] loaded = output.load(id, outputEpoch, max, outTotal, errTotal);
        return e.withOutput(loaded[0], loaded[1]);
    }

    /** The latest progress its run reported (V23); null: none. */
    private static Progress progress(ResultSet rs) throws SQLException {
        Instant at = instant(rs, "progress_at");
        if (at == null) {
            return null;
        }
        int percent = rs.getInt("progress_percent");
        return new Progress(rs.wasNull() ? null : percent, rs.getString("progress_message"), at);
    }

    /** A {@code webhooks} row as {@code row_to_json} writes it; null: none. */
    private static Webhook webhook(String json) {
        if (json == null) {
            return null;
        }
        try {
            JsonNode w = JSON.readTree(json);
            return new Webhook(w.path("url").asText(), w.path("state").asText(),
                    w.path("event_id").textValue(), w.path("attempts").asInt(),
                    w.path("last_status").isNumber() ? w.path("last_status").asInt() : null, w.path("last_error").textValue(),
                    jsonInstant(w.path("last_attempt_at")), jsonInstant(w.path("next_attempt_at")),
                    jsonInstant(w.path("delivered_at")));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("unreadable webhooks row: " + e.getOriginalMessage(), e);
        }
    }

    /** A timestamptz as row_to_json writes it ("2026-12-02T18:00:00.123456+00:00"). */
    private static Instant jsonInstant(JsonNode node) {
        return node.isTextual() ? OffsetDateTime.parse(node.asText()).toInstant() : null;
    }

    private static Retry retry(ResultSet rs) throws SQLException {
        Integer max = (Integer) rs.getObject("retry_max");
        if (max == null) {
            return null;
        }
        Array on = rs.getArray("retry_on");
        return new Retry(max, rs.getLong("retry_backoff_ms"),
                on == null ? null : List.of((String[]) on.getArray()), rs.getInt("retries"), rs.getString("last_failure"));
    }

    private static Resources resources(ResultSet rs) throws SQLException {
        Resources r = new Resources((Integer) rs.getObject("memory_mb"),
                (Integer) rs.getObject("cpu_millis"), (Integer) rs.getObject("pids"), (Integer) rs.getObject("tmpfs_mb"),
                rs.getString("network"));
        return r.isEmpty() ? Resources.NONE : r;
    }

    private static StdinState stdin(ResultSet rs) throws SQLException {
        String mode = rs.getString("stdin");
        if (mode == null || mode.equals("none")) {
            return StdinState.NONE;
        }
        return new StdinState(StdinMode.fromWire(mode), rs.getLong("stdin_bytes"),
                rs.getTimestamp("stdin_closed_at") != null);
    }

    static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }

    static String json(Map<String, String> map) {
        if (map.isEmpty()) {
            return "{}";
        }
        try {
            return JSON.writeValueAsString(map);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("cannot encode a map of strings", e);
        }
    }

    private static Map<String, String> parse(String json) {
        try {
            // Most rows have no env and no labels: no parser for those.
            return json == null || json.equals("{}") ? Map.of() : JSON.readValue(json, STRING_MAP);
        } catch (JsonProcessingException e) {
            throw new StoreException("stored JSON is not a map of strings: " + json, e);
        }
    }
}
