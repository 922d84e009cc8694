package io.outrun.core.owner;

import com.zaxxer.hikari.HikariDataSource;
import io.outrun.core.execution.Submission;
import io.outrun.core.store.Database;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.worker.lease.LeaseStore;
import io.outrun.core.store.SubmissionStore;
import io.outrun.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The running cap's check ({@code outrun_owner_may_run}) counts after taking the owner's lock and
 * must see what committed while it waited: READ COMMITTED. A database whose sessions default to
 * REPEATABLE READ (an operator's {@code ALTER DATABASE ... SET default_transaction_isolation})
 * would count from a snapshot taken before the wait and let cap + 1 run; the pool pins READ COMMITTED.
 */
class CapIsolationIT {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final String OWNER = "rr";

    @Test
    void theCapHoldsOnADatabaseWhoseSessionsDefaultToRepeatableRead() throws Exception {
        DatabaseConfig db = TestDatabase.fresh(DatabaseConfig::new);
        try (HikariDataSource setup = Database.pool(db, "setup"); Connection c = setup.getConnection();
             Statement s = c.createStatement()) {
            Database.migrate(setup);
            s.execute("DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = %L',"
                    + " current_database(), 'repeatable read'); END $$");
        }
        // New sessions only: the setting applies to connections made after it.
        try (HikariDataSource pool = Database.pool(db, "test"); Connection lock = pool.getConnection();
             Statement ls = lock.createStatement()) {
            SubmissionStore submissions = new SubmissionStore(pool);
            LeaseStore leases = new LeaseStore(pool);
            new OwnerStore(pool).set(OWNER, 1, null);
            UUID first = submissions.insert(Submission.of(OWNER, "true")).execution().id();
            UUID second = submissions.insert(Submission.of(OWNER, "true")).execution().id();
            // Hold the owner's lock, so both claims take their snapshot, then wait on it in turn.
            lock.setAutoCommit(false);
            ls.execute("SELECT pg_advisory_xact_lock(hashtextextended('outrun.owner:" + OWNER + "', 0))");
            ExecutorService threads = Executors.newFixedThreadPool(2);
            try {
                Future<java.util.Optional<io.outrun.core.execution.Execution>> a = threads.submit(() -> leases.claim(first, "node/a", TTL, null));
                awaitWaiters(pool, 1);
                Future<java.util.Optional<io.outrun.core.execution.Execution>> b = threads.submit(() -> leases.claim(second, "node/b", TTL, null));
                awaitWaiters(pool, 2);
                lock.commit();
                int won = (a.get().isPresent() ? 1 : 0) + (b.get().isPresent() ? 1 : 0);
                assertThat(won).as("claims won under a cap of 1").isEqualTo(1);
            } finally {
                threads.shutdownNow();
            }
        }
    }

    private static void awaitWaiters(HikariDataSource pool, int n) throws Exception {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            io.outrun.testing.Await.until(n + " claims waiting on the owner's lock",
                    Duration.ofSeconds(10), () -> {
                        try (ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")) {
                            rs.next();
                            return rs.getInt(1) == n;
                        } catch (java.sql.SQLException e) {
                            throw new IllegalStateException(e);
                        }
                    });
        }
    }
}
