package io.outrun.api.http;

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
import com.zaxxer.hikari.HikariDataSource;
import io.outrun.core.store.DatabaseHosts;
import io.outrun.core.store.DiskFull;
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
        /** Reachable and able to store. */
        OK,
        UNREACHABLE,
        /** The URL names several hosts (a highly available database) and none is a primary that answers: failing over. */
        NO_PRIMARY,
        DISK_FULL,
        READ_ONLY
    }

    static final Duration DEFAULT_WITHIN = Duration.ofSeconds(3);

    /**
     * How long a write probe's finding stands. The write is a small DDL transaction (two xids, a
     * dead catalog row, ~700 B of WAL and a WAL flush): a load balancer probing every second on
     * every node should not pay that each time. Reachability is still checked on every call.
     */
    static final long WRITE_PROBE_EVERY_NS = TimeUnit.SECONDS.toNanos(5);

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
    private final DatabaseHosts hosts;
    private final Duration within;
    private final DiskFull diskFull;
    private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "outrun-health");
        t.setDaemon(true);
        return t;
    });
    private final AtomicReference<CompletableFuture<Health>> inFlight = new AtomicReference<>();
    // Touched only by the probe thread.
    private Health lastWrite = Health.OK;
    private long lastWriteAt;
    private boolean writeProbed;
    private boolean warnedNoPrivilege;

    /** {@code diskFull} learns what each probe finds, so submits are refused while the disk is full. */
    HealthCheck(DataSource dataSource, Duration within, DiskFull diskFull) {
        this.dataSource = dataSource;
        this.hosts = dataSource instanceof HikariDataSource pool ? DatabaseHosts.of(pool.getJdbcUrl()) : null;
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
        Health found;
        try {
            found = check.get(within.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            found = Health.UNREACHABLE;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            found = Health.UNREACHABLE;
        }
        // The pool connects to a primary only (targetServerType=primary): with several hosts, an
        // unreachable database is one whose primary died and whose standby is not promoted yet.
        return found == Health.UNREACHABLE && hosts != null && hosts.several() ? Health.NO_PRIMARY : found;
    }

    /** What {@code health} says about the database, in words, for the answer's {@code database} field. */
    String reason(Health health) {
        return switch (health) {
            case OK -> "ok";
            case NO_PRIMARY, UNREACHABLE -> hosts != null ? hosts.unreachable() : "PostgreSQL does not answer";
            case DISK_FULL -> "its disk is full: it stores nothing new";
            case READ_ONLY -> "it takes no writes (a standby, or default_transaction_read_only)";
        };
    }

    private Health probe() {
        try (Connection c = dataSource.getConnection()) {
            if (!c.isValid((int) Math.max(1, within.toSeconds()))) {
                // Dead (its server restarted or died in a failover): the pool would hand it out
                // again, trusted for a while (Database.pool), and every probe would fail on it.
                if (dataSource instanceof HikariDataSource pool) {
                    pool.evictConnection(c);
                }
                return Health.UNREACHABLE;
            }
            long now = System.nanoTime();
            // A write that failed for the disk since the last probe is news: probe again at once.
            if (writeProbed && now - lastWriteAt < WRITE_PROBE_EVERY_NS && !diskFull.seenAfter(lastWriteAt)) {
                return lastWrite;
            }
            Health found;
            try (Statement st = c.createStatement()) {
                st.setQueryTimeout((int) Math.max(1, within.toSeconds()));
                st.execute(WRITE_PROBE);
                diskFull.cleared();
                found = Health.OK;
            } catch (SQLException e) {
                found = writeFailure(e);
            }
            lastWrite = found;
            lastWriteAt = now;
            writeProbed = true;
            return found;
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
                // Another node's probe (or a pg_dump) holds the table: nothing learned, keep the last finding.
                return lastWrite;
            case "42501":
                // The node's role may not truncate the table (separate migration and service roles):
                // say so once, and do not take the node out of service for it.
                if (!warnedNoPrivilege) {
                    warnedNoPrivilege = true;
                    LOG.warn("health: this node's database role may not write the probe table, so /health cannot tell a"
                            + " full disk; grant it: GRANT TRUNCATE, INSERT ON outrun_write_probe TO <role> ({})",
                            e.getMessage());
                }
                return Health.OK;
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
