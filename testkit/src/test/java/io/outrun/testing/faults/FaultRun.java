package io.outrun.testing.faults;

import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * A synthetic fault run for the checker's tests: the lines a harness would have written (in the
 * agreed formats) and the rows the fleet would have left, in a fresh migrated database.
 */
final class FaultRun {

    static final long T0 = 1_765_000_000_000L;

    final Path dir;
    final String url;
    final String user;
    final String password;
    final Rows rows;
    private final List<String> history = new ArrayList<>();
    private final List<String> marks = new ArrayList<>();
    private final List<String> webhooks = new ArrayList<>();
    private final List<String> nemesis = new ArrayList<>();

    FaultRun(Path dir) {
        this.dir = dir;
        String[] db = TestDatabase.migrated((u, us, p) -> new String[] {u, us, p});
        this.url = db[0];
        this.user = db[1];
        this.password = db[2];
        this.rows = Rows.on(url, user, password);
    }

    /** An invoke at {@code t} and its ok (202) 20 ms later by process {@code p}. */
    FaultRun submitted(int p, long t, String key, UUID id, boolean webhook, Integer expectLines) {
        history.add(op(t, p, "submit", "invoke", key, null, null, webhook, expectLines));
        history.add(op(t + 20, p, "submit", "ok", key, id, 202, false, null));
        return this;
    }

    /** An invoke whose answer never came (a timeout): "info", may or may not exist. */
    FaultRun indeterminate(int p, long t, String key) {
        history.add(op(t, p, "submit", "invoke", key, null, null, false, null));
        history.add(op(t + 5_000, p, "submit", "info", key, null, null, false, null));
        return this;
    }

    FaultRun cancelled(int p, long t, UUID id) {
        history.add(op(t - 10, p, "cancel", "invoke", null, id, null, false, null));
        history.add(op(t, p, "cancel", "ok", null, id, 202, false, null));
        return this;
    }

    /** The command's marks for one attempt: start at {@code from}, alive every 100 ms, end at {@code to} (null: none). */
    FaultRun ran(UUID id, int attempt, String host, long from, long to, Integer exit) {
        marks.add(mark(from, "start", id, attempt, host, null));
        for (long t = from + 100; t < to; t += 100) {
            marks.add(mark(t, "alive", id, attempt, host, null));
        }
        if (exit != null) {
            marks.add(mark(to, "end", id, attempt, host, exit));
        } else {
            marks.add(mark(to, "alive", id, attempt, host, null));
        }
        return this;
    }

    FaultRun delivered(long t, String webhookId, UUID id, String status) {
        webhooks.add("{\"t\":" + t + ",\"webhookId\":\"" + webhookId + "\",\"executionId\":\"" + id
                + "\",\"status\":\"" + status + "\"}");
        return this;
    }

    FaultRun fault(long t, String fault, String target) {
        nemesis.add("{\"t\":" + t + ",\"fault\":\"" + fault + "\",\"target\":\"" + target + "\",\"detail\":\"\"}");
        return this;
    }

    /** An executions row as the fleet would leave it (owner alice unless a schedule's). */
    FaultRun row(UUID id, String key, String status, int attempt, String labelsJson) throws SQLException {
        boolean terminal = !status.equals("queued") && !status.equals("running");
        rows.update("INSERT INTO executions (id, owner, command, timeout_ms, max_output_bytes, status, attempt,"
                + " idempotency_key, labels, lease_owner, lease_epoch, output_epoch, finished_at)"
                + " VALUES (?, 'alice', 'workload', 60000, 1048576, ?, ?, ?, ?::jsonb, ?, ?, ?,"
                + " CASE WHEN ? THEN now() END)",
                id, status, attempt, key, labelsJson, status.equals("running") ? "w1/1" : null,
                (long) attempt, (long) attempt, terminal);
        return this;
    }

    FaultRun row(UUID id, String key, String status) throws SQLException {
        return row(id, key, status, 1, "{}");
    }

    /** Stdout of the row's shown epoch, in chunks as the capture flushes them. */
    FaultRun stdout(UUID id, String... chunks) throws SQLException {
        long at = 0;
        for (String chunk : chunks) {
            byte[] data = chunk.getBytes(StandardCharsets.UTF_8);
            rows.update("INSERT INTO execution_output (execution_id, epoch, stream, start_offset, end_offset, data)"
                    + " SELECT id, output_epoch, 1, ?, ?, ? FROM executions WHERE id = ?", at, at + data.length, data, id);
            at += data.length;
        }
        rows.update("UPDATE executions SET stdout_total_bytes = ? WHERE id = ?", at, id);
        return this;
    }

    FaultRun schedule(String name, String recurringJobId) throws SQLException {
        rows.update("INSERT INTO schedules (owner, name, recurring_job_id, every_ms, overlap, submission)"
                + " VALUES ('alice', ?, ?, 60000, 'skip', '{}'::jsonb)", name, recurringJobId);
        return this;
    }

    /** A firing of the schedule clock: key schedule-&lt;job id&gt;-&lt;due ms&gt;, label schedule=&lt;name&gt;. */
    FaultRun fired(UUID id, String name, String recurringJobId, long due) throws SQLException {
        return row(id, "schedule-" + recurringJobId + "-" + due, "succeeded", 1, "{\"schedule\":\"" + name + "\"}");
    }

    FaultRun write() {
        try {
            Files.write(dir.resolve(RunDirectory.HISTORY), history, StandardCharsets.UTF_8);
            Files.write(dir.resolve(RunDirectory.MARKS), marks, StandardCharsets.UTF_8);
            Files.write(dir.resolve(RunDirectory.WEBHOOKS), webhooks, StandardCharsets.UTF_8);
            Files.write(dir.resolve(RunDirectory.NEMESIS), nemesis, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    /** Writes the files, then runs the checker as its CLI would, minus the JVM's exit. */
    Verdict check() throws SQLException {
        write();
        try (var c = java.sql.DriverManager.getConnection(url, user, password)) {
            return HistoryChecker.check(dir, c, 7L, 12.5);
        }
    }

    private static String op(long t, int p, String op, String phase, String key, UUID id, Integer status,
                             boolean webhook, Integer expectLines) {
        return "{\"t\":" + t + ",\"process\":" + p + ",\"op\":\"" + op + "\",\"phase\":\"" + phase + "\",\"key\":"
                + quoted(key) + ",\"executionId\":" + quoted(id == null ? null : id.toString()) + ",\"status\":" + status
                + ",\"error\":null,\"webhook\":" + webhook + ",\"expectLines\":" + expectLines + "}";
    }

    private static String mark(long t, String mark, UUID id, int attempt, String host, Integer exit) {
        return "{\"t\":" + t + ",\"mark\":\"" + mark + "\",\"executionId\":\"" + id + "\",\"attempt\":" + attempt
                + ",\"host\":\"" + host + "\"" + (exit == null ? "" : ",\"exit\":" + exit) + "}";
    }

    private static String quoted(String s) {
        return s == null ? "null" : "\"" + s + "\"";
    }
}
