package io.outrun.core.files;

import io.outrun.core.store.ExecutionsTable;
import io.outrun.core.store.Lease;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.StoreException;
import java.io.IOException;
import java.io.InputStream;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The {@code artifacts} and {@code artifact_chunks} tables: what an execution's worker collected
 * (files, the full output, what was over a limit) and the reads of any API node. Reads are
 * owner-scoped: another owner's execution answers exactly like a missing one.
 */
public final class ArtifactStore {

    private static final NamedSql CHUNK_INSERT = NamedSql.of(
            "INSERT INTO artifact_chunks (execution_id, name, seq, data) VALUES (:id, :name, :seq, :data)");
    private static final NamedSql CHUNK_SELECT = NamedSql.of(
            "SELECT data FROM artifact_chunks WHERE execution_id = :id AND name = :name AND seq = :seq");
    private static final NamedSql CLEAR = NamedSql.of("DELETE FROM artifacts WHERE execution_id = :id");
    private static final NamedSql STORED = NamedSql.of("""
            UPDATE artifacts SET status = :status, size = :size, sha256 = :sha256, seek_points = :seek_points::int8[]
             WHERE execution_id = :id AND name = :name""");
    private static final NamedSql DELETE_ONE = NamedSql.of("DELETE FROM artifacts WHERE execution_id = :id AND name = :name");
    private static final NamedSql INSERT = NamedSql.of("""
            INSERT INTO artifacts (execution_id, name, status, size, sha256, encoding, detail)
            VALUES (:id, :name, :status, :size, :sha256, :encoding, :detail)""");
    private static final NamedSql LIST = NamedSql.of("""
            SELECT name, status, size, sha256, encoding, detail, created_at, seek_points
              FROM artifacts WHERE execution_id = :id ORDER BY name""");

    private final DataSource dataSource;

    public ArtifactStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    // --- worker side: fenced on the lease -----------------------------------------------------

    /** Removes what an earlier attempt collected; false when the lease is gone. */
    public boolean clear(Lease lease) {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                if (!fenced(c, lease)) {
                    c.rollback();
                    return false;
                }
                try (PreparedStatement ps = CLEAR.prepare(c, NamedSql.Args.of("id", lease.executionId()))) {
                    ps.executeUpdate();
                }
                c.commit();
                return true;
            } catch (SQLException e) {
                c.rollback();
                throw e;
            }
        } catch (SQLException e) {
            throw new StoreException("cannot clear the artifacts of " + lease.executionId(), e);
        }
    }

    /**
     * Stores one artifact from {@code content} (already bounded by the caller), in one transaction.
     *
     * @param rawSize   for gzip: the decompressed size (else ignored: the bytes written count)
     * @param rawSha256 for gzip: the SHA-256 of the decompressed bytes
     * @return false when the lease is gone (nothing is kept)
     */
    public boolean store(Lease lease, String name, InputStream content, String encoding, long rawSize, String rawSha256,
                         boolean complete, String detail) throws IOException {
        return store(lease, name, content, encoding, rawSize, rawSha256, complete, detail, null);
    }

    /**
     * As above; {@code seekPoints}: for gzip stored as a series of members, pairs (raw offset,
     * stored offset) of where each starts (null: one stream, read from its start).
     */
    public boolean store(Lease lease, String name, InputStream content, String encoding, long rawSize, String rawSha256,
                         boolean complete, String detail, long[] seekPoints) throws IOException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                if (!fenced(c, lease)) {
                    c.rollback();
                    return false;
                }
                upsertRow(c, lease.executionId(), name, "incomplete", 0, null, encoding, detail);
                ChunkWriter.Written written = ChunkWriter.write(c, CHUNK_INSERT, content,
                        (seq, data) -> NamedSql.Args.of("id", lease.executionId(), "name", name, "seq", seq).and("data", data));
                boolean gzip = encoding.equals("gzip");
                NamedSql.Args args = NamedSql.Args.of("status", complete ? "stored" : "incomplete",
                                "size", gzip ? rawSize : written.bytes(), "sha256", gzip ? rawSha256 : written.sha256())
                        .and("seek_points", gzip && seekPoints != null
                                ? c.createArrayOf("int8", Arrays.stream(seekPoints).boxed().toArray()) : null)
                        .and("id", lease.executionId())
                        .and("name", name);
                try (PreparedStatement ps = STORED.prepare(c, args)) {
                    ps.executeUpdate();
                }
                if (!fenced(c, lease)) {
                    c.rollback();
                    return false;
                }
                c.commit();
                return true;
            } catch (SQLException | IOException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        } catch (SQLException e) {
            throw new StoreException("cannot store artifact " + name + " of " + lease.executionId(), e);
        }
    }

    /** Records a file that was asked for but not stored, and why. */
    public boolean report(Lease lease, String name, String status, long size, String detail) {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                if (!fenced(c, lease)) {
                    c.rollback();
                    return false;
                }
                upsertRow(c, lease.executionId(), name, status, size, null, "identity", detail);
                c.commit();
                return true;
            } catch (SQLException e) {
                c.rollback();
                throw e;
            }
        } catch (SQLException e) {
            throw new StoreException("cannot record artifact " + name + " of " + lease.executionId(), e);
        }
    }

    private static void upsertRow(Connection c, UUID id, String name, String status, long size, String sha,
                                  String encoding, String detail) throws SQLException {
        try (PreparedStatement ps = DELETE_ONE.prepare(c, NamedSql.Args.of("id", id, "name", name))) {
            ps.executeUpdate();
        }
        NamedSql.Args args = NamedSql.Args.of("id", id, "name", name, "status", status)
                .and("size", size).and("sha256", sha).and("encoding", encoding).and("detail", detail);
        try (PreparedStatement ps = INSERT.prepare(c, args)) {
            ps.executeUpdate();
        }
    }

    static boolean fenced(Connection c, Lease lease) throws SQLException {
        try (PreparedStatement ps = ExecutionsTable.RUNNING_UNDER_EPOCH.prepare(c, NamedSql.Args.of("id", lease.executionId(), "epoch", lease.epoch()))) {
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    // --- API side: owner-scoped reads ---------------------------------------------------------

    /** The artifacts of the owner's execution, by name; empty when it is not the owner's (or does not exist). */
    public Optional<List<Artifact>> list(UUID id, String owner) {
        try (Connection c = dataSource.getConnection()) {
            if (!owned(c, id, owner)) {
                return Optional.empty();
            }
            List<Artifact> all = new ArrayList<>();
            try (PreparedStatement ps = LIST.prepare(c, NamedSql.Args.of("id", id))) {
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        all.add(row(rs));
                    }
                }
            }
            return Optional.of(all);
        } catch (SQLException e) {
            throw new StoreException("cannot list the artifacts of " + id, e);
        }
    }

    /** One artifact of the owner's execution; empty when either is missing. */
    public Optional<Artifact> find(UUID id, String owner, String name) {
        return list(id, owner).flatMap(all -> all.stream().filter(a -> a.name().equals(name)).findFirst());
    }

    /** The stored bytes of an artifact (as stored: gzip for encoding gzip) from chunk {@code firstChunk} on. */
    public InputStream open(UUID id, String name, int firstChunk) {
        return new ChunkStream(dataSource, CHUNK_SELECT, firstChunk,
                seq -> NamedSql.Args.of("id", id, "name", name, "seq", seq));
    }

    private static boolean owned(Connection c, UUID id, String owner) throws SQLException {
        try (PreparedStatement ps = ExecutionsTable.OWNED.prepare(c, NamedSql.Args.of("id", id, "owner", owner))) {
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    private static Artifact row(ResultSet rs) throws SQLException {
        Array points = rs.getArray(8);
        long[] seek = null;
        if (points != null) {
            Object[] values = (Object[]) points.getArray();
            seek = new long[values.length];
            for (int i = 0; i < values.length; i++) {
                seek[i] = ((Number) values[i]).longValue();
            }
        }
        return new Artifact(rs.getString(1), rs.getString(2), rs.getLong(3), rs.getString(4), rs.getString(5),
                rs.getString(6), rs.getTimestamp(7).toInstant(), seek);
    }
}
