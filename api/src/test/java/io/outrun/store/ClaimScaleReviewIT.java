package io.outrun.store;

import com.zaxxer.hikari.HikariDataSource;
import io.outrun.execution.RunInputs;
import io.outrun.execution.Submission;
import io.outrun.service.Core;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of issue 24 (not part of the suite): what the claim and the dashboard watch cost on a
 * realistic table. Each test prints its figures; the assertions state what should hold.
 */
class ClaimScaleReviewIT {

    private static final Duration TTL = Duration.ofSeconds(30);

    private static HikariDataSource migrated() {
        HikariDataSource pool = Database.pool(TestDatabase.fresh(DatabaseConfig::new), "review");
        Database.migrate(pool);
        return pool;
    }

    /** One queued row for each of {@code owners} owners o1..oN. */
    private static void queuedOwners(HikariDataSource pool, int owners) throws Exception {
        Rows.on(pool).update("INSERT INTO executions (id, owner, command, timeout_ms, max_output_bytes)"
                + " SELECT gen_random_uuid(), 'o' || g, 'true', 60000, 1048576 FROM generate_series(1, ?) g", owners);
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("VACUUM ANALYZE executions");
        }
    }

    private static double claimMs(LeaseStore leases, Integer defaultCap) {
        long t0 = System.nanoTime();
        leases.claim("review/1", 4, TTL, defaultCap);
        return (System.nanoTime() - t0) / 1e6;
    }

    /**
     * Under an operator default cap, every claim takes the advisory lock of EVERY owner with
     * queued work (outrun_owner_free in the owners CTE), not only of those it picks: cost and
     * lock-table use grow with the number of owners, and past max_locks_per_transaction x
     * max_connections every claim of the fleet fails.
     */
    @Test
    void aCappedClaimLocksEveryQueuedOwner() throws Exception {
        try (HikariDataSource pool = migrated()) {
            queuedOwners(pool, 5_000);
            LeaseStore leases = new LeaseStore(pool);
            // Warm up both plans.
            leases.claim("review/0", 1, TTL, null);
            leases.claim("review/0", 1, TTL, 2);
            double uncapped = claimMs(leases, null);
            double capped = claimMs(leases, 2);
            // How many advisory locks one capped claim holds (counted in a transaction left open).
            long locks;
            try (Connection c = pool.getConnection()) {
                c.setAutoCommit(false);
                try (PreparedStatement ps = claim(c, 4, 2)) {
                    ps.executeQuery().close();
                }
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")) {
                    rs.next();
                    locks = rs.getLong(1);
                }
                c.rollback();
            }
            System.out.printf("REVIEW caps: 5,000 owners with queued work: claim of 4 slots uncapped %.1f ms,"
                    + " under a default cap %.1f ms, advisory locks held by one capped claim: %d%n", uncapped, capped, locks);
            assertThat(locks).as("advisory locks one claim of 4 slots holds").isLessThanOrEqualTo(4);
        }
    }

    /** Past the lock table's size (max_locks_per_transaction x max_connections) a capped claim fails outright. */
    @Test
    void aCappedClaimFailsWhenOwnersOutnumberTheLockTable() throws Exception {
        try (HikariDataSource pool = migrated()) {
            long maxLocks = Rows.on(pool).single("SELECT current_setting('max_locks_per_transaction')::int"
                    + " * (current_setting('max_connections')::int + current_setting('max_prepared_transactions')::int)");
            int owners = (int) (maxLocks * 2);
            queuedOwners(pool, owners);
            LeaseStore leases = new LeaseStore(pool);
            RuntimeException failed = null;
            try {
                leases.claim("review/1", 4, TTL, 2);
            } catch (RuntimeException e) {
                failed = e;
            }
            System.out.printf("REVIEW caps: lock table %d, %d owners with queued work, capped claim: %s%n", maxLocks, owners,
                    failed == null ? "ok" : failed.getCause());
            assertThat(failed).as("a claim of 4 slots under a default cap").isNull();
        }
    }

    /**
     * A workspace chain: one run in workspace "main", K more of the same owner queued on it
     * (an agent's next commands). Every claim, for any owner, scans those K rows and runs
     * outrun_workspace_busy on each (which itself joins every execution_inputs row named "main").
     */
    @Test
    void aQueuedWorkspaceChainMakesEveryClaimScanIt() throws Exception {
        try (HikariDataSource pool = migrated()) {
            SubmissionStore submissions = new SubmissionStore(pool);
            LeaseStore leases = new LeaseStore(pool);
            UUID first = submissions.insert(Submission.of("agent", "sleep 600")
                    .withInputs(new RunInputs(null, List.of(), "main"))).execution().id();
            assertThat(leases.claim(first, "review/1", TTL)).isPresent();
            submissions.insert(Submission.of("bob", "true"));
            double before = claimMsRolledBack(pool, 4);
            for (int k : new int[] {1_000, 4_000}) {
                Rows.on(pool).update("WITH ins AS (INSERT INTO executions (id, owner, command, timeout_ms, max_output_bytes)"
                        + " SELECT gen_random_uuid(), 'agent', 'make', 60000, 1048576 FROM generate_series(1, ?) RETURNING id)"
                        + " INSERT INTO execution_inputs (execution_id, workspace) SELECT id, 'main' FROM ins",
                        k - (k == 4_000 ? 1_000 : 0));
                try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
                    s.execute("VACUUM ANALYZE executions");
                    s.execute("VACUUM ANALYZE execution_inputs");
                }
                double ms = claimMsRolledBack(pool, 4);
                System.out.printf("REVIEW workspace: claim (4 slots; bob's 1 row is the only claimable one) with %,d of"
                        + " agent's rows queued behind its busy workspace: %.1f ms (none queued: %.1f ms)%n", k, ms, before);
            }
            double ms = claimMsRolledBack(pool, 4);
            assertThat(ms).as("a claim's time with 4,000 rows queued on a busy workspace").isLessThan(50);
        }
    }

    /** The claim as the nodes send it, bound by name. */
    private static PreparedStatement claim(Connection c, int slots, Integer cap) throws java.sql.SQLException {
        SqlText sql = LeaseStore.claimStatement();
        PreparedStatement ps = c.prepareStatement(sql.jdbc());
        for (int i = 0; i < sql.names().size(); i++) {
            switch (sql.names().get(i)) {
                case "only_id" -> ps.setNull(i + 1, java.sql.Types.OTHER);
                case "default_max_running" -> {
                    if (cap == null) {
                        ps.setNull(i + 1, java.sql.Types.INTEGER);
                    } else {
                        ps.setInt(i + 1, cap);
                    }
                }
                case "slots" -> ps.setInt(i + 1, slots);
                case "owner" -> ps.setString(i + 1, "review/9");
                case "ttl_ms" -> ps.setLong(i + 1, 30_000L);
                default -> throw new IllegalArgumentException(sql.names().get(i));
            }
        }
        return ps;
    }

    /** Best of 3 claims, each rolled back, so the table stays as set up. */
    private static double claimMsRolledBack(HikariDataSource pool, int slots) throws Exception {
        double best = Double.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            try (Connection c = pool.getConnection()) {
                c.setAutoCommit(false);
                long t0 = System.nanoTime();
                try (PreparedStatement ps = claim(c, slots, null)) {
                    ResultSet rs = ps.executeQuery();
                    while (rs.next()) {
                        // drain
                    }
                }
                best = Math.min(best, (System.nanoTime() - t0) / 1e6);
                c.rollback();
                c.setAutoCommit(true);
            }
        }
        return best;
    }

    /**
     * The sweep's dashboard watch (every sweep interval) joins jobs to executions on
     * x.job_id::text::bpchar = j.id, which the V9 index executions_live_job (on job_id) cannot
     * serve. Jobs ENQUEUED in the last minute (every submission's) are all in its window.
     */
    @Test
    void theDashboardWatchCannotUseItsIndex() throws Exception {
        DatabaseConfig db = TestDatabase.fresh(DatabaseConfig::new);
        try (Core core = Core.open(db, "review")) {
            HikariDataSource pool = core.pool();
            // A backlog of 300k queued rows (old), and 5,000 submitted in the last minute with ENQUEUED jobs.
            Rows.on(pool).update("INSERT INTO executions (id, owner, command, timeout_ms, max_output_bytes, enqueued_at, created_at)"
                    + " SELECT gen_random_uuid(), 'o' || (g % 1000), 'true', 60000, 1048576, now() - interval '1 hour',"
                    + " now() - interval '1 hour' FROM generate_series(1, 300000) g");
            Rows.on(pool).update("INSERT INTO executions (id, owner, command, timeout_ms, max_output_bytes)"
                    + " SELECT gen_random_uuid(), 'o' || (g % 1000), 'true', 60000, 1048576 FROM generate_series(1, 5000) g");
            Rows.on(pool).update("INSERT INTO jobrunr_jobs (id, version, jobAsJson, jobSignature, state, createdAt, updatedAt,"
                    + " scheduledAt) SELECT job_id::text, 1, '{}', 'review', 'ENQUEUED', now() AT TIME ZONE 'UTC',"
                    + " CASE WHEN created_at > now() - interval '1 minute' THEN localtimestamp ELSE localtimestamp - interval '1 hour' END,"
                    + " NULL FROM executions");
            Rows.on(pool).update("UPDATE fleet_tasks SET watermark = now() - interval '2 seconds' WHERE name = 'sweep'");
            try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
                s.execute("VACUUM ANALYZE executions");
                s.execute("VACUUM ANALYZE jobrunr_jobs");
            }
            String sql = RedriveStore.dashboardWatchStatement().jdbc();
            String fixed = sql.replace("x.job_id::text::bpchar = j.id", "x.job_id = j.id::uuid");
            String[] plans = {explain(pool, sql), explain(pool, fixed)};
            System.out.println("REVIEW dashboard watch, as shipped:\n" + plans[0]);
            System.out.println("REVIEW dashboard watch, joined on x.job_id = j.id::uuid:\n" + plans[1]);
            assertThat(plans[0]).as("the watch's plan uses executions_live_job").contains("executions_live_job");
        }
    }

    private static String explain(HikariDataSource pool, String sql) throws Exception {
        StringBuilder text = new StringBuilder();
        for (int run = 0; run < 3; run++) {
            text.setLength(0);
            try (Connection c = pool.getConnection();
                 PreparedStatement ps = c.prepareStatement("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql)) {
                ps.setInt(1, 500);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        text.append(rs.getString(1)).append('\n');
                    }
                }
            }
        }
        return text.toString();
    }
}
