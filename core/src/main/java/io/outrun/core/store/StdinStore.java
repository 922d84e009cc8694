package io.outrun.core.store;

import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.StdinState;
import io.outrun.model.inputs.StdinMode;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The {@code execution_stdin} table (V11): what owners write to their commands' stdin, appended
 * at exact byte offsets. An owner's write is one statement: the row lock on the execution orders
 * concurrent writers (each takes the offset the previous one left), the bytes are stored, and the
 * node that runs it is woken ({@link Channels#STDIN}). The worker reads from the offset it has
 * delivered to the running attempt; a new attempt starts from 0.
 */
public final class StdinStore {

    /** Bytes one write may carry (decoded). */
    public static final int MAX_WRITE_BYTES = 1 << 20;
    /** Bytes one execution's stdin may take in all. */
    public static final long MAX_TOTAL_BYTES = 16L << 20;

    private final DataSource dataSource;

    public StdinStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** How a write went: written (at {@code offset}), or why not. */
    public enum Result { WRITTEN, NOT_FOUND, FINISHED, NOT_OPEN, CLOSED, TOO_LARGE }

    /**
     * The answer to a write: the result, where the bytes went, the stdin after it, and the
     * execution's status when it had ended.
     */
    public record Written(Result result, long offset, StdinState stdin, ExecutionStatus status) {
    }

    /** Appends {@code data} (and end of file when {@code eof}) to the stdin of the owner's execution. */
    public Written write(UUID id, String owner, byte[] data, boolean eof) {
        NamedSql.Args args = NamedSql.Args.of("id", id, "owner", owner, "len", (long) data.length)
                .and("eof", eof).and("max_total", MAX_TOTAL_BYTES).and("data", data);
        try (Connection c = dataSource.getConnection()) {
            try (PreparedStatement ps = ExecutionsTable.WRITE_STDIN.prepare(c, args); ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    return new Written(Result.WRITTEN, rs.getLong(1), null, null);
                }
            }
            try (PreparedStatement ps = ExecutionsTable.STDIN_WHY_NOT.prepare(c, NamedSql.Args.of("id", id, "owner", owner));
                 ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return new Written(Result.NOT_FOUND, 0, null, null);
                }
                ExecutionStatus status = ExecutionStatus.fromWire(rs.getString("status"));
                StdinState stdin = new StdinState(StdinMode.fromWire(rs.getString("stdin")), rs.getLong("stdin_bytes"),
                        rs.getBoolean("closed"));
                Result why = stdin.mode() == StdinMode.NONE ? Result.NOT_OPEN
                        : status.isTerminal() ? Result.FINISHED
                        : stdin.closed() ? Result.CLOSED
                        : Result.TOO_LARGE;
                return new Written(why, stdin.bytes(), stdin, status);
            }
        } catch (SQLException e) {
            throw new StoreException("cannot write to the stdin of execution " + id, e);
        }
    }

    /** What a worker has not delivered yet: chunks from {@code from} on (a bounded batch), and the stdin's state. */
    public record Pending(long total, boolean closed, List<Chunk> chunks) {
        /** Bytes at {@code offset}. */
        public record Chunk(long offset, byte[] data) {
        }
    }

    /** The stdin written from byte {@code from} on (empty when the execution is gone). */
    public Optional<Pending> pending(UUID id, long from) {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = ExecutionsTable.STDIN_PENDING.prepare(c, NamedSql.Args.of("id", id, "from", from))) {
            ps.setQueryTimeout(ExecutionRows.WRITE_TIMEOUT_S);
            try (ResultSet rs = ps.executeQuery()) {
                long total = -1;
                boolean closed = false;
                List<Pending.Chunk> chunks = new ArrayList<>();
                while (rs.next()) {
                    total = rs.getLong(1);
                    closed = rs.getBoolean(2);
                    byte[] data = rs.getBytes(4);
                    if (data != null) {
                        chunks.add(new Pending.Chunk(rs.getLong(3), data));
                    }
                }
                return total < 0 ? Optional.empty() : Optional.of(new Pending(total, closed, chunks));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot read the stdin of execution " + id, e);
        }
    }
}
