package io.outrun.core.files;

import io.outrun.core.store.NamedSql;
import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.function.BiFunction;

/** Writes a stream as numbered chunks on the caller's connection (its transaction), hashing as it goes. */
final class ChunkWriter {

    private ChunkWriter() {
    }

    /** What was written: bytes, chunks, and the SHA-256 of the bytes. */
    record Written(long bytes, int chunks, String sha256) {
    }

    /**
     * @param sql inserts one chunk, prepared once for all of them
     * @param key the values of one chunk, from its seq and data
     */
    static Written write(Connection c, NamedSql sql, InputStream in, BiFunction<Integer, byte[], NamedSql.Args> key)
            throws SQLException, IOException {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        long total = 0;
        int seq = 0;
        byte[] buffer = new byte[ChunkStream.CHUNK];
        try (PreparedStatement ps = sql.prepare(c)) {
            while (true) {
                int n = in.readNBytes(buffer, 0, buffer.length);
                if (n == 0) {
                    break;
                }
                sha.update(buffer, 0, n);
                sql.bind(ps, key.apply(seq++, n == buffer.length ? buffer : Arrays.copyOf(buffer, n)));
                ps.executeUpdate();
                total += n;
                if (n < buffer.length) {
                    break;
                }
            }
        }
        return new Written(total, seq, HexFormat.of().formatHex(sha.digest()));
    }
}
