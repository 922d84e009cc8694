package io.outrun.core.files;

import java.io.IOException;
import java.io.InputStream;
import io.outrun.core.store.NamedSql;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.function.IntFunction;
import javax.sql.DataSource;

/**
 * Reads a chunked value back one chunk at a time, each in its own short query: memory stays one
 * chunk whatever the size, and no connection or snapshot is held while the client reads slowly.
 * A value replaced meanwhile (a workspace saved again) may be read half old, half new; the
 * sha256 listed with it tells.
 */
public final class ChunkStream extends InputStream {

    /** Bytes per stored chunk. */
    public static final int CHUNK = 1 << 20;

    private final DataSource dataSource;
    private final NamedSql sql;
    private final IntFunction<NamedSql.Args> key;
    private int seq;
    private byte[] chunk = new byte[0];
    private int pos;
    private boolean ended;

    /** @param sql selects {@code data} of one chunk; {@code key} gives its values for a chunk's seq */
    ChunkStream(DataSource dataSource, NamedSql sql, int firstSeq, IntFunction<NamedSql.Args> key) {
        this.dataSource = dataSource;
        this.sql = sql;
        this.key = key;
        this.seq = firstSeq;
    }

    private boolean fill() throws IOException {
        while (pos >= chunk.length) {
            if (ended) {
                return false;
            }
            try (Connection c = dataSource.getConnection(); PreparedStatement ps = sql.prepare(c, key.apply(seq))) {
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        ended = true;
                        return false;
                    }
                    chunk = rs.getBytes(1);
                    pos = 0;
                    seq++;
                }
            } catch (SQLException e) {
                throw new IOException("cannot read chunk " + seq + ": " + e.getMessage(), e);
            }
        }
        return true;
    }

    @Override
    public int read() throws IOException {
        return fill() ? chunk[pos++] & 0xff : -1;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        if (!fill()) {
            return -1;
        }
        int n = Math.min(len, chunk.length - pos);
        System.arraycopy(chunk, pos, b, off, n);
        pos += n;
        return n;
    }

    /**
     * What the current chunk still holds, or 1 while more chunks may follow: GZIPInputStream reads
     * the next member of a multi-member gzip (a kept full output, V12) only when its input says
     * bytes are available, and would end early at a member that ends on a chunk's boundary.
     */
    @Override
    public int available() {
        return pos < chunk.length ? chunk.length - pos : ended ? 0 : 1;
    }

    @Override
    public long skip(long n) throws IOException {
        long skipped = 0;
        while (skipped < n && fill()) {
            int step = (int) Math.min(n - skipped, chunk.length - pos);
            pos += step;
            skipped += step;
        }
        return skipped;
    }
}
