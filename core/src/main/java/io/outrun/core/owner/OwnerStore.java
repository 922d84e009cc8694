package io.outrun.core.owner;

import io.outrun.core.store.ExecutionsTable;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.StoreException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/** The {@code owners} table: an owner's own caps, where the operator set them. */
public final class OwnerStore {

    /** An owner's own caps; a null one falls back to the operator's default. */
    public record Caps(String owner, Integer maxRunning, Integer maxQueued) {
    }

    /** How many queued executions an owner has (counted up to a bound) and its own queued cap. */
    record Queued(long count, Integer ownCap) {
    }

    private static final NamedSql SET = NamedSql.of("""
            INSERT INTO owners (owner, max_running, max_queued) VALUES (:owner, :max_running::int, :max_queued::int)
            ON CONFLICT (owner) DO UPDATE SET max_running = EXCLUDED.max_running,
              max_queued = EXCLUDED.max_queued, updated_at = now()""");
    private static final NamedSql GET = NamedSql.of("SELECT owner, max_running, max_queued FROM owners WHERE owner = :owner");
    private static final NamedSql LIST = NamedSql.of("SELECT owner, max_running, max_queued FROM owners ORDER BY owner");

    private final DataSource dataSource;

    public OwnerStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** Sets an owner's caps; null leaves that cap to the operator's default. */
    public Caps set(String owner, Integer maxRunning, Integer maxQueued) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = SET.prepare(c,
                NamedSql.Args.of("owner", owner, "max_running", maxRunning, "max_queued", maxQueued))) {
            ps.executeUpdate();
            return new Caps(owner, maxRunning, maxQueued);
        } catch (SQLException e) {
            throw new StoreException("cannot set the caps of owner " + owner, e);
        }
    }

    public Optional<Caps> get(String owner) {
        List<Caps> found = select(GET, NamedSql.Args.of("owner", owner));
        return found.isEmpty() ? Optional.empty() : Optional.of(found.get(0));
    }

    public List<Caps> list() {
        return select(LIST, NamedSql.Args.of());
    }

    /**
     * Counts an owner's queued executions up to its queued cap (its own, else {@code defaultCap}),
     * so a backlog past the cap costs no more to count than the cap.
     */
    Queued queued(String owner, int defaultCap) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = ExecutionsTable.QUEUED_OF_OWNER.prepare(c,
                NamedSql.Args.of("owner", owner, "default_cap", defaultCap))) {
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Queued(rs.getLong(1), (Integer) rs.getObject(2));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot count the queued executions of owner " + owner, e);
        }
    }

    private List<Caps> select(NamedSql sql, NamedSql.Args args) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = sql.prepare(c, args)) {
            List<Caps> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Caps(rs.getString(1), (Integer) rs.getObject(2), (Integer) rs.getObject(3)));
                }
            }
            return rows;
        } catch (SQLException e) {
            throw new StoreException("cannot read the owners table", e);
        }
    }
}
