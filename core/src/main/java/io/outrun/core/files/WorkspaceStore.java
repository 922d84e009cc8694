package io.outrun.core.files;

import io.outrun.core.store.Lease;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.StoreException;
import java.io.IOException;
import java.io.InputStream;
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
 * The {@code workspaces} and {@code workspace_chunks} tables. A save replaces the whole workspace in
 * one transaction (readers see the old one or the new one, never a mix within one chunk read),
 * fenced on the saving run's lease.
 */
public final class WorkspaceStore {

    /** Names: what a directory name may be, short enough for a label. */
    public static final String NAME_PATTERN = "[A-Za-z0-9][A-Za-z0-9._-]{0,99}";
    private static final NamedSql CHUNK_SELECT = NamedSql.of(
            "SELECT data FROM workspace_chunks WHERE owner = :owner AND name = :name AND seq = :seq");
    private static final NamedSql CHUNK_INSERT = NamedSql.of(
            "INSERT INTO workspace_chunks (owner, name, seq, data) VALUES (:owner, :name, :seq, :data)");
    private static final NamedSql LIST = NamedSql.of("""
            SELECT name, size, sha256, saved_at, saved_by FROM workspaces WHERE owner = :owner ORDER BY name""");
    private static final NamedSql FIND = NamedSql.of("""
            SELECT name, size, sha256, saved_at, saved_by FROM workspaces WHERE owner = :owner AND name = :name""");
    private static final NamedSql DELETE = NamedSql.of("DELETE FROM workspaces WHERE owner = :owner AND name = :name");
    private static final NamedSql INSERT = NamedSql.of("""
            INSERT INTO workspaces (owner, name, size, sha256, saved_by) VALUES (:owner, :name, 0, '', :saved_by)""");
    private static final NamedSql SAVED = NamedSql.of("""
            UPDATE workspaces SET size = :size, sha256 = :sha256, saved_at = now() WHERE owner = :owner AND name = :name""");

    private final DataSource dataSource;

    public WorkspaceStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    public List<Workspace> list(String owner) {
        List<Workspace> all = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = LIST.prepare(c, NamedSql.Args.of("owner", owner))) {
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    all.add(row(rs));
                }
            }
            return all;
        } catch (SQLException e) {
            throw new StoreException("cannot list the workspaces of " + owner, e);
        }
    }

    public Optional<Workspace> find(String owner, String name) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = FIND.prepare(c,
                NamedSql.Args.of("owner", owner, "name", name))) {
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(row(rs)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new StoreException("cannot read workspace " + name + " of " + owner, e);
        }
    }

    /** True when it existed. */
    public boolean delete(String owner, String name) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = DELETE.prepare(c,
                NamedSql.Args.of("owner", owner, "name", name))) {
            return ps.executeUpdate() > 0;
        } catch (SQLException e) {
            throw new StoreException("cannot delete workspace " + name + " of " + owner, e);
        }
    }

    /** The tar, streamed chunk by chunk. */
    public InputStream open(String owner, String name) {
        return new ChunkStream(dataSource, CHUNK_SELECT, 0,
                seq -> NamedSql.Args.of("owner", owner, "name", name, "seq", seq));
    }

    /**
     * Replaces the workspace with {@code tar} (already bounded by the caller), in one transaction
     * fenced on the saving run's lease.
     *
     * @return false when the lease is gone (nothing changed)
     */
    public boolean save(Lease lease, String owner, String name, InputStream tar) throws IOException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                if (!ArtifactStore.fenced(c, lease)) {
                    c.rollback();
                    return false;
                }
                try (PreparedStatement ps = DELETE.prepare(c, NamedSql.Args.of("owner", owner, "name", name))) {
                    ps.executeUpdate();
                }
                try (PreparedStatement ps = INSERT.prepare(c,
                        NamedSql.Args.of("owner", owner, "name", name, "saved_by", lease.executionId()))) {
                    ps.executeUpdate();
                }
                ChunkWriter.Written written = ChunkWriter.write(c, CHUNK_INSERT, tar,
                        (seq, data) -> NamedSql.Args.of("owner", owner, "name", name, "seq", seq).and("data", data));
                try (PreparedStatement ps = SAVED.prepare(c, NamedSql.Args.of("size", written.bytes(),
                        "sha256", written.sha256(), "owner", owner).and("name", name))) {
                    ps.executeUpdate();
                }
                if (!ArtifactStore.fenced(c, lease)) {
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
            throw new StoreException("cannot save workspace " + name + " of " + owner, e);
        }
    }

    private static Workspace row(ResultSet rs) throws SQLException {
        return new Workspace(rs.getString(1), rs.getLong(2), rs.getString(3), rs.getTimestamp(4).toInstant(),
                rs.getObject(5, UUID.class));
    }
}
