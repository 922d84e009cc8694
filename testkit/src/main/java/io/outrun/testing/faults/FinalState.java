package io.outrun.testing.faults;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * What the database holds once the run is over: every execution, the schedules, and the stdout of
 * the executions whose output the checker counts (read from {@code execution_output} as
 * {@code OutputStore} keeps it: chunks at byte offsets under the execution's {@code output_epoch}).
 */
public record FinalState(Map<String, Execution> executions, Map<String, String> scheduleByJobId,
                         Map<String, Stdout> stdout) {

    static final Set<String> TERMINAL = Set.of("succeeded", "failed", "timed_out", "cancelled");

    /** The columns of an {@code executions} row the rules look at. */
    public record Execution(String id, String owner, String idempotencyKey, String status, int attempt,
                            Map<String, String> labels, boolean finished, long outputEpoch,
                            long stdoutTotalBytes, boolean stdoutTruncated) {
        boolean terminal() {
            return TERMINAL.contains(status);
        }
    }

    /**
     * The stdout the database gives back for an execution: its lines and whether the kept bytes
     * run without a gap from 0 to the recorded total (a truncated output does not).
     */
    public record Stdout(int lines, long contiguousBytes, long totalBytes, boolean truncated) {
        boolean whole() {
            return !truncated && contiguousBytes == totalBytes;
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    /** Reads the executions and schedules, and the stdout of {@code outputOf} (ids). */
    public static FinalState read(Connection c, Collection<String> outputOf) throws SQLException {
        Map<String, Execution> executions = new LinkedHashMap<>();
        try (Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT id, owner, idempotency_key, status, attempt, labels::text,"
                     + " finished_at IS NOT NULL, output_epoch, stdout_total_bytes, stdout_truncated"
                     + " FROM executions ORDER BY created_at, id")) {
            while (rs.next()) {
                Execution e = new Execution(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
                        rs.getInt(5), labels(rs.getString(6)), rs.getBoolean(7), rs.getLong(8), rs.getLong(9),
                        rs.getBoolean(10));
                executions.put(e.id(), e);
            }
        }
        Map<String, String> schedules = new HashMap<>();
        try (Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT recurring_job_id, owner, name FROM schedules")) {
            while (rs.next()) {
                schedules.put(rs.getString(1), rs.getString(2) + "/" + rs.getString(3));
            }
        }
        Map<String, Stdout> stdout = new HashMap<>();
        for (String id : outputOf) {
            Execution e = executions.get(id);
            if (e != null) {
                stdout.put(id, stdout(c, e));
            }
        }
        return new FinalState(executions, schedules, stdout);
    }

    /** Walks the stdout chunks of the shown epoch from offset 0 while they join up, counting lines. */
    private static Stdout stdout(Connection c, Execution e) throws SQLException {
        long at = 0;
        int newlines = 0;
        boolean lastOpen = false;
        try (PreparedStatement ps = c.prepareStatement("SELECT start_offset, data FROM execution_output"
                + " WHERE execution_id = ? AND epoch = ? AND stream = 1 ORDER BY start_offset")) {
            ps.setObject(1, UUID.fromString(e.id()));
            ps.setLong(2, e.outputEpoch());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    long start = rs.getLong(1);
                    byte[] data = rs.getBytes(2);
                    if (start > at) {
                        break;   // a gap: what follows is the kept tail, not lines we can count
                    }
                    for (long i = at - start; i < data.length; i++) {
                        lastOpen = data[(int) i] != '\n';
                        if (!lastOpen) {
                            newlines++;
                        }
                    }
                    at = Math.max(at, start + data.length);
                }
            }
        }
        return new Stdout(newlines + (lastOpen ? 1 : 0), at, e.stdoutTotalBytes(), e.stdoutTruncated());
    }

    private static Map<String, String> labels(String json) {
        Map<String, String> out = new LinkedHashMap<>();
        try {
            JsonNode n = JSON.readTree(json == null ? "{}" : json);
            n.fields().forEachRemaining(f -> out.put(f.getKey(), f.getValue().asText()));
        } catch (IOException ex) {
            throw new UncheckedIOException("labels are not JSON: " + json, ex);
        }
        return out;
    }
}
