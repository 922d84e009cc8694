package io.outrun.http;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import io.outrun.store.DiskFull;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Answers "can this node's database take work?" within a bound: reachable, and able to store
 * something. A database that answers but cannot write (its disk full, or a read-only standby)
 * takes no submission and runs nothing, so a health check that only connected said ok while
 * every submit was lost to it (issue 25).
 *
 * <p>A pool checkout waits up to the pool's connection timeout (10 s) when the database is down,
 * longer than a load balancer waits for a health check; here the check runs on its own thread
 * and counts as {@link Health#UNREACHABLE} after {@code within}. Concurrent checks share the one
 * in flight, so a flood of health probes against a dead database costs one thread, not one per
 * probe.
 */
final class HealthCheck implements AutoCloseable {

    /** What a check found. */
    enum Health {
        OK, UNREACHABLE, DISK_FULL, READ_ONLY
    }

    static final Duration DEFAULT_WITHIN = Duration.ofSeconds(3);

    /**
     * One round trip that needs new disk space: TRUNCATE gives the empty probe table a new file,
     * and the insert must extend it by a page (PostgreSQL writes the page out at once to catch a
     * full disk there). Both are undone by raising an error the block catches, so nothing stays
     * but a dead catalog row for autovacuum. lock_timeout bounds a wait behind another node's
     * probe.
     */
    private static final String WRITE_PROBE = """
            DO $probe$
            BEGIN
              PERFORM set_config('lock_timeout', '1s', true);
              BEGIN
                TRUNCATE outrun_write_probe;
                INSERT INTO outrun_write_probe VALUES (now());
                RAISE SQLSTATE 'OR001';
              EXCEPTION WHEN SQLSTATE 'OR001' THEN
                NULL; -- the write worked; the subtransaction is rolled back
              END;
            END
            $probe$""";

    private static final Logger LOG = LoggerFactory.getLogger(HealthCheck.class);

    private final DataSource dataSource;
    private final Duration within;
    private final DiskFull diskFull;
    private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "outrun-health");
        t.setDaemon(true);
        return t;
    });
    private final AtomicReference<CompletableFuture<Health>> inFlight = new AtomicReference<>();

    /** {@code diskFull} learns what each probe finds, so submits are refused while the disk is full. */
    HealthCheck(DataSource dataSource, Duration within, DiskFull diskFull) {
        this.dataSource = dataSource;
        this.within = within;
        this.diskFull = diskFull;
    }

    Health check() {
        CompletableFuture<Health> check = inFlight.get();
        if (check == null || check.isDone()) {
            CompletableFuture<Health> fresh = new CompletableFuture<>();
            if (inFlight.compareAndSet(check, fresh)) {
                thread.execute(() -> {
                    Health found = Health.UNREACHABLE;
                    try {
                        found = probe();
                    } finally {
                        fresh.complete(found); // whatever happened, the next check probes anew
                    }
                });
                check = fresh;
            } else {
                check = inFlight.get();
            }
        }
        try {
            return check.get(within.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            return Health.UNREACHABLE;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Health.UNREACHABLE;
        }
    }

    private Health probe() {
        try (Connection c = dataSource.getConnection()) {
            if (!c.isValid((int) Math.max(1, within.toSeconds()))) {
                return Health.UNREACHABLE;
            }
            try (Statement st = c.createStatement()) {
                st.setQueryTimeout((int) Math.max(1, within.toSeconds()));
                st.execute(WRITE_PROBE);
                diskFull.cleared();
                return Health.OK;
            } catch (SQLException e) {
                return writeFailure(e);
            }
        } catch (Exception e) {
            return Health.UNREACHABLE;
        }
    }

    private Health writeFailure(SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        switch (state) {
            case "53100":
                diskFull.seen();
                LOG.warn("health: the database cannot store anything, its disk is full ({})", e.getMessage());
                return Health.DISK_FULL;
            case "25006":
                LOG.warn("health: the database is read-only ({})", e.getMessage());
                return Health.READ_ONLY;
            case "55P03":
                return Health.OK; // another node's probe held the table: the database does write
            default:
                LOG.warn("health: the database's write probe failed ({}: {})", state, e.getMessage());
                return Health.UNREACHABLE;
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
