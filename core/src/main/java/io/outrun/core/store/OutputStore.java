package io.outrun.core.store;

import io.outrun.model.output.Captured;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * The {@code execution_output} table: each run's output as chunks at exact byte offsets, appended
 * as it arrives, so a flush writes only new bytes and a reader reads only what it returns.
 *
 * <p>The kept bounds are those of the worker's capture: half of {@code max_output_bytes} for the
 * head (from offset 0), the rest for the tail (ending at the last byte). The writer appends only
 * kept bytes and deletes, in batches, tail chunks that fell out of the tail; the reader takes the
 * contiguous run from 0 within the head and the contiguous run ending at the last byte within the
 * tail, so a chunk not yet deleted never shows.
 */
public final class OutputStore {

    /** The append and its NOTIFY (long polls of these executions read the new bytes) in one round trip. */
    static final NamedSql APPEND = NamedSql.of("""
            WITH ins AS (INSERT INTO execution_output (execution_id, epoch, stream, start_offset, end_offset, data)
                SELECT u.id, u.epoch, u.stream, u.off, u.off + octet_length(u.data), u.data
                  FROM unnest(:ids::uuid[], :epochs::int8[], :streams::int2[], :offsets::int8[], :datas::bytea[])
                    AS u(id, epoch, stream, off, data)
                  JOIN leases l ON l.execution_id = u.id AND l.epoch = u.epoch AND l.owner = :holder AND l.expires_at > now()
                ON CONFLICT (execution_id, epoch, stream, start_offset) DO UPDATE
                  SET data = EXCLUDED.data, end_offset = EXCLUDED.end_offset
                  WHERE EXCLUDED.end_offset >= execution_output.end_offset
                RETURNING execution_id)
            -- 'outrun_changed' is Channels.CHANGED
            SELECT x.id, pg_notify('outrun_changed', x.id::text) FROM (SELECT DISTINCT execution_id AS id FROM ins) x""");

    /**
     * Chunks never straddle the head's end (the capture cuts there): a chunk starting past the
     * head is a tail chunk, deleted once it ends below the kept tail.
     */
    private static final NamedSql DROP = NamedSql.of("""
            DELETE FROM execution_output o USING executions e,
                unnest(:ids::uuid[], :epochs::int8[], :out_below::int8[], :err_below::int8[])
                  AS d(id, epoch, out_below, err_below)
             WHERE e.id = d.id AND o.execution_id = d.id AND o.epoch = d.epoch
               -- Fenced like the append: a stale flush never deletes what it does not replace.
               AND EXISTS (SELECT 1 FROM leases l WHERE l.execution_id = d.id AND l.epoch = d.epoch AND l.owner = :holder
                 AND l.expires_at > now())
               AND o.start_offset >= e.max_output_bytes / 2
               AND o.end_offset <= CASE o.stream WHEN 1 THEN d.out_below ELSE d.err_below END""");

    private static final NamedSql READ = NamedSql.of("""
            SELECT stream, start_offset, data FROM execution_output
             WHERE execution_id = :id AND epoch = :epoch
               AND ((stream = 1 AND end_offset > :out_from) OR (stream = 2 AND end_offset > :err_from))
             ORDER BY stream, start_offset""");

    private OutputStore() {
    }

    /**
     * Appends under the leases they name (epoch, holder, not expired), in one statement for all
     * runs; a chunk of a lost lease is not written. A repeated flush (its answer was lost) is
     * idempotent: a chunk at an offset already stored replaces it unless it is shorter.
     *
     * @return the executions some output of which was written
     */
    public static Set<UUID> append(Connection c, String holder, Collection<OutputUpdate> updates) throws SQLException {
        List<Chunk> chunks = new ArrayList<>();
        updates.forEach(u -> chunks.addAll(u.chunks()));
        Set<UUID> written = new HashSet<>();
        if (!chunks.isEmpty()) {
            // The append and its NOTIFY (long polls of these executions read the new bytes) in one round trip.
            NamedSql.Args args = NamedSql.Args.of("holder", holder)
                    .and("ids", c.createArrayOf("uuid", chunks.stream().map(Chunk::executionId).toArray()))
                    .and("epochs", c.createArrayOf("int8", chunks.stream().map(Chunk::epoch).toArray()))
                    .and("streams", c.createArrayOf("int2", chunks.stream().map(k -> (short) k.stream()).toArray()))
                    .and("offsets", c.createArrayOf("int8", chunks.stream().map(Chunk::offset).toArray()))
                    .and("datas", c.createArrayOf("bytea", chunks.stream().map(Chunk::data).toArray(byte[][]::new)));
            try (PreparedStatement ps = APPEND.prepare(c, args)) {
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        written.add(rs.getObject(1, UUID.class));
                    }
                }
            }
        }
        drop(c, holder, updates);
        return written;
    }

    /** Deletes stored tail chunks that fell out of the kept tail (rare: once per tail's worth of output). */
    private static void drop(Connection c, String holder, Collection<OutputUpdate> updates) throws SQLException {
        List<OutputUpdate> dropping = updates.stream()
                .filter(u -> u.dropStdoutBelow() > 0 || u.dropStderrBelow() > 0).toList();
        if (dropping.isEmpty()) {
            return;
        }
        NamedSql.Args args = NamedSql.Args.of("holder", holder)
                .and("ids", c.createArrayOf("uuid", dropping.stream().map(u -> u.lease().executionId()).toArray()))
                .and("epochs", c.createArrayOf("int8", dropping.stream().map(u -> u.lease().epoch()).toArray()))
                .and("out_below", c.createArrayOf("int8", dropping.stream().map(OutputUpdate::dropStdoutBelow).toArray()))
                .and("err_below", c.createArrayOf("int8", dropping.stream().map(OutputUpdate::dropStderrBelow).toArray()));
        try (PreparedStatement ps = DROP.prepare(c, args)) {
            ps.executeUpdate();
        }
    }

    /** Which bytes of an execution's output a read loads. */
    public record Read(boolean load, long stdoutFrom, long stderrFrom) {
        /** No output bytes (only the byte counts). */
        public static final Read NONE = new Read(false, 0, 0);
        /** Everything kept. */
        public static final Read ALL = new Read(true, 0, 0);

        /** Only bytes at or after these stream offsets (a cursor's). */
        public static Read since(long stdoutFrom, long stderrFrom) {
            return new Read(true, Math.max(0, stdoutFrom), Math.max(0, stderrFrom));
        }
    }

    /**
     * Reads what is kept of both streams of one run. Bytes before the read's offsets are not
     * loaded: they come back as zeros, which a reader slicing from its cursor never looks at.
     */
    static Captured[] read(Connection c, UUID id, long epoch, int maxOutputBytes, long stdoutTotal, long stderrTotal,
                           Read read) throws SQLException {
        if (!read.load() || stdoutTotal + stderrTotal == 0) {
            return new Captured[] {totalsOnly(stdoutTotal), totalsOnly(stderrTotal)};
        }
        List<List<Chunk>> streams = List.of(new ArrayList<>(), new ArrayList<>());
        NamedSql.Args args = NamedSql.Args.of("id", id, "epoch", epoch, "out_from", read.stdoutFrom())
                .and("err_from", read.stderrFrom());
        try (PreparedStatement ps = READ.prepare(c, args)) {
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    int stream = rs.getInt(1);
                    streams.get(stream - 1).add(new Chunk(id, epoch, stream, rs.getLong(2), rs.getBytes(3)));
                }
            }
        }
        return new Captured[] {
                assemble(streams.get(0), stdoutTotal, maxOutputBytes, read.stdoutFrom()),
                assemble(streams.get(1), stderrTotal, maxOutputBytes, read.stderrFrom())};
    }

    private static Captured totalsOnly(long total) {
        return new Captured(new byte[0], new byte[0], total);
    }

    /**
     * The head and tail of one stream from its chunks (sorted by offset, none ending at or before
     * {@code from}): the contiguous bytes from 0 within the head's half, and the contiguous bytes
     * ending at {@code total} within the tail's half.
     */
    static Captured assemble(List<Chunk> chunks, long total, int maxOutputBytes, long from) {
        int headCap = maxOutputBytes / 2;
        int tailCap = maxOutputBytes - headCap;
        int headWant = (int) Math.min(total, headCap);
        byte[] head = new byte[headWant];
        int headEnd = (int) Math.min(from, headWant);  // bytes before the cursor count as present
        for (Chunk k : chunks) {
            if (k.offset() >= headWant || headEnd >= headWant) {
                break;
            }
            if (k.offset() > headEnd) {
                break; // a gap: the head ends here
            }
            int to = (int) Math.min(k.end(), headWant);
            if (to > headEnd) {
                System.arraycopy(k.data(), (int) (headEnd - k.offset()), head, headEnd, to - headEnd);
                headEnd = to;
            }
        }
        long tailStart = Math.max(headEnd, total - tailCap);
        long cur = total;
        List<Chunk> used = new ArrayList<>();
        for (int i = chunks.size() - 1; i >= 0 && cur > tailStart; i--) {
            Chunk k = chunks.get(i);
            if (k.end() < cur) {
                break; // a gap: the tail starts after it
            }
            if (k.offset() < cur) {
                used.add(k);
                cur = Math.max(k.offset(), tailStart);
            }
        }
        if (cur > tailStart && from >= cur) {
            cur = tailStart; // the rest lies before the cursor: not loaded, counted as present
        }
        byte[] tail = new byte[(int) (total - cur)];
        for (Chunk k : used) {
            long s = Math.max(k.offset(), cur);
            long e = Math.min(k.end(), total);
            if (e > s) {
                System.arraycopy(k.data(), (int) (s - k.offset()), tail, (int) (s - cur), (int) (e - s));
            }
        }
        return Captured.ofRaw(headEnd == head.length ? head : Arrays.copyOf(head, headEnd), tail, total);
    }
}
