package io.outrun.core.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * A fleet-wide mutex on a PostgreSQL session advisory lock. If the holder dies, its connection
 * closes and the lock is free again: no lease or clean-up needed.
 */
public final class AdvisoryLock {

    private static final NamedSql LOCK = NamedSql.of("SELECT true FROM pg_advisory_lock(:key)");
    private static final NamedSql TRY_LOCK = NamedSql.of("SELECT pg_try_advisory_lock(:key)");
    private static final NamedSql UNLOCK = NamedSql.of("SELECT pg_advisory_unlock(:key)");

    private final DataSource dataSource;
    private final long key;

    public AdvisoryLock(DataSource dataSource, long key) {
        this.dataSource = dataSource;
        this.key = key;
    }

    /** Runs {@code work} while holding the lock, waiting for it as long as it takes. */
    public <T> T runExclusive(Supplier<T> work) {
        return run(true, work).orElseThrow();
    }

    /** Runs {@code work} only if nobody holds the lock now; empty otherwise. */
    public <T> Optional<T> tryRunExclusive(Supplier<T> work) {
        return run(false, work);
    }

    private <T> Optional<T> run(boolean wait, Supplier<T> work) {
        try (Connection c = dataSource.getConnection()) {
            if (!call(c, wait ? LOCK : TRY_LOCK)) {
                return Optional.empty();
            }
            try {
                return Optional.of(work.get());
            } finally {
                call(c, UNLOCK);
            }
        } catch (SQLException e) {
            throw new StoreException("advisory lock " + Long.toHexString(key) + " failed", e);
        }
    }

    private boolean call(Connection c, NamedSql sql) throws SQLException {
        try (PreparedStatement ps = sql.prepare(c, NamedSql.Args.of("key", key))) {
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }
}
