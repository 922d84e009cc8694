package io.outrun.core.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/** A run's latest progress (V23 {@code progress_*}), written by its run token while its attempt runs. */
public final class ProgressStore {

    private final DataSource dataSource;

    public ProgressStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** Keeps {@code percent} and {@code message} as the run's latest; empty when that attempt no longer runs. */
    public Optional<Instant> report(UUID id, String owner, int attempt, long epoch, Integer percent, String message) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = ExecutionsTable.PROGRESS.prepare(c,
                NamedSql.Args.of("id", id, "owner", owner, "attempt", attempt).and("epoch", epoch).and("percent", percent)
                        .and("message", message));
             ResultSet rs = ps.executeQuery()) {
            return rs.next() ? Optional.of(rs.getTimestamp(1).toInstant()) : Optional.empty();
        } catch (SQLException e) {
            throw new StoreException("cannot store the progress of " + id, e);
        }
    }
}
