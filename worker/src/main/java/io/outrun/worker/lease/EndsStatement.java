package io.outrun.worker.lease;

import io.outrun.core.store.Chunk;
import io.outrun.core.store.ExecutionRows;
import io.outrun.core.store.EndsTable;
import io.outrun.core.store.Lease;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.Outcome;
import io.outrun.core.store.OutputUpdate;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;

/**
 * One write of several ends ({@link EndsTable#ENDS}): binds them as arrays, one element per
 * end (and per chunk of last output), and reads back what became of each.
 */
final class EndsStatement {

    /** One end to write: its lease, how it ended, the operator's default running cap (null: none). */
    record End(Lease lease, Outcome outcome, Integer defaultMaxRunning) {
        /** The run it ends: one end per run in a statement (the update would take one of two). */
        Key key() {
            return new Key(lease.executionId(), lease.epoch());
        }
    }

    record Key(UUID id, long epoch) {
    }

    /** What became of one end: written (and whether its owner has queued work), busy (written again), or fenced out. */
    enum State { ENDED, BUSY, LOST }

    record Answer(State state, boolean ownerQueued) {
        static final Answer LOST = new Answer(State.LOST, false);
    }

    private EndsStatement() {
    }

    /** Runs the statement for {@code ends} (distinct runs) in its own round trip, autocommit. */
    static Map<Key, Answer> write(Connection c, List<End> ends) throws SQLException {
        List<Chunk> chunks = new ArrayList<>();
        List<OutputUpdate> drops = new ArrayList<>();
        for (End end : ends) {
            OutputUpdate out = end.outcome().output();
            if (out == null) {
                continue;
            }
            chunks.addAll(out.chunks());
            if (out.dropStdoutBelow() > 0 || out.dropStderrBelow() > 0) {
                drops.add(out);
            }
        }
        NamedSql.Args args = NamedSql.Args.of(
                        "ids", array(c, "uuid", ends, e -> e.lease().executionId()),
                        "epochs", array(c, "int8", ends, e -> e.lease().epoch()),
                        "statuses", array(c, "text", ends, e -> e.outcome().status().wire()))
                .and("exit_codes", array(c, "int4", ends, e -> e.outcome().exitCode()))
                .and("error_codes", array(c, "text", ends, e -> e.outcome().errorCode()))
                .and("error_messages", array(c, "text", ends, e -> e.outcome().errorMessage()))
                .and("stdout_totals", array(c, "int8", ends, e -> e.outcome().stdoutTotal()))
                .and("stderr_totals", array(c, "int8", ends, e -> e.outcome().stderrTotal()))
                .and("default_caps", array(c, "int4", ends, End::defaultMaxRunning))
                .and("chunk_ids", array(c, "uuid", chunks, Chunk::executionId))
                .and("chunk_epochs", array(c, "int8", chunks, Chunk::epoch))
                .and("streams", array(c, "int2", chunks, k -> (short) k.stream()))
                .and("offsets", array(c, "int8", chunks, Chunk::offset))
                .and("datas", c.createArrayOf("bytea", chunks.stream().map(Chunk::data).toArray(byte[][]::new)))
                .and("drop_ids", array(c, "uuid", drops, u -> u.lease().executionId()))
                .and("drop_epochs", array(c, "int8", drops, u -> u.lease().epoch()))
                .and("out_below", array(c, "int8", drops, OutputUpdate::dropStdoutBelow))
                .and("err_below", array(c, "int8", drops, OutputUpdate::dropStderrBelow));
        Map<Key, Answer> answers = new HashMap<>();
        try (PreparedStatement ps = EndsTable.ENDS.prepare(c, args)) {
            ps.setQueryTimeout(ExecutionRows.WRITE_TIMEOUT_S);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Key key = new Key(rs.getObject("id", UUID.class), rs.getLong("epoch"));
                    answers.put(key, rs.getBoolean("ended") ? new Answer(State.ENDED, rs.getBoolean("owner_queued"))
                            : new Answer(State.BUSY, false));
                }
            }
        }
        return answers;
    }

    /** An array of one value per item (a null value is a SQL NULL element). */
    private static <T> Array array(Connection c, String type, List<T> items, Function<T, Object> value) throws SQLException {
        return c.createArrayOf(type, items.stream().map(value).toArray());
    }
}
