package io.outrun.core.store;

import io.outrun.core.execution.ExecutionStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The {@code fleet_tasks} table's sweep watermark, and the sweep's reads of JobRunr's jobs (its
 * statements on executions are {@link ExecutionsTable}'s). Getting executions back to a worker
 * when the one that had them is gone (re-driving expired leases), and reading what an admin
 * changed on the dashboard. What the sweep runs to repair,
 * apart from the hot path of a run, so that each repair's guard (its {@code SKIP LOCKED}, its
 * watermark) reads next to the others. Every statement is safe to run on many nodes at once.
 */
public final class RedriveStore {

    /**
     * JobRunr jobs an admin changed on the dashboard since the sweep's last look (with a minute of
     * overlap for the clocks of the nodes that wrote them): a job DELETED while it still carries
     * a queued or running execution (an admin's cancel), and a job ENQUEUED that carries none (an
     * admin's Requeue of an ended job; Outrun's own jobs are enqueued for a queued execution).
     */
    private static final NamedSql CHANGED_ON_DASHBOARD = NamedSql.of("""
            SELECT j.id::uuid AS job_id, j.state, x.id AS execution_id
            FROM jobrunr_jobs j
              -- The job's execution by its current job (V9 executions_live_job), a lookup per job.
              LEFT JOIN executions x ON x.job_id = j.id::uuid AND x.status IN ('queued', 'running')
            -- A scalar subquery, so the mark is a parameter at run time: a range of JobRunr's
            -- (state, updatedAt) index, not the whole table.
            WHERE j.state IN ('DELETED', 'ENQUEUED')
              AND j.updatedAt > ((SELECT watermark FROM fleet_tasks WHERE name = 'sweep') - interval '1 minute')::timestamp
              AND (j.state = 'DELETED') = (x.id IS NOT NULL)
              -- An ENQUEUED job never updated since it was made is one the books have not written
              -- yet (its execution may have ended already), not an admin's Requeue.
              AND (j.state = 'DELETED' OR j.updatedAt > j.createdAt)
              -- A schedule's firing job carries no execution: the schedule clock ends those an admin
              -- requeues (issue 45). Taken here, 500 of them filled every batch and the pass never ended.
              AND j.recurringjobid IS NULL
              -- A running one already asked to stop is not asked again at every pass.
              AND x.cancel_requested_at IS NULL
            ORDER BY j.updatedAt LIMIT :limit""");

    private static final NamedSql ADVANCE_WATERMARK = NamedSql.of("""
            UPDATE fleet_tasks SET watermark = now() WHERE name = 'sweep'""");

    private final DataSource dataSource;

    public RedriveStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /**
     * Moves running rows whose lease expired more than {@link Lease#REDRIVE_GRACE_MS} ago (their
     * runs have killed themselves by then): re-driven while attempts remain, else reaped to
     * {@code failed} with {@code lease_expired}. Rows another sweep is handling are skipped.
     */
    public List<Departed> redriveExpired(int limit) {
        return redriveExpired(null, limit);
    }

    /** As {@link #redriveExpired(int)}, for one execution only (the opportunistic check on a poll). */
    public List<Departed> redriveExpired(UUID onlyId, int limit) {
        return Departure.ABANDON.apply(dataSource, Departure.Rows.EXPIRED, "lease_expired", Messages.leaseExpired(), null,
                NamedSql.Args.of("grace_ms", Lease.REDRIVE_GRACE_MS, "only_id", onlyId, "limit", limit).and("delay_ms", 0));
    }

    /** How long after an execution's end its job may still be open before the sweep closes it. */
    public static final Duration BOOKS_GRACE = Duration.ofSeconds(10);

    /** An ended execution whose current JobRunr job was left ENQUEUED or PROCESSING by a node that stopped. */
    public record LeftOpen(UUID executionId, UUID jobId, String owner, ExecutionStatus status, int attempt,
                           int maxAttempts, Integer exitCode, String errorCode, String errorMessage) {
    }

    /**
     * Ended executions whose job is still open (see {@link ExecutionsTable#BOOKS_LEFT_OPEN}); read before
     * {@link #changedOnDashboard}, which moves the mark on.
     */
    public List<LeftOpen> booksLeftOpen(int limit) {
        List<LeftOpen> open = new ArrayList<>();
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = ExecutionsTable.BOOKS_LEFT_OPEN.prepare(c, NamedSql.Args.of("grace_ms", BOOKS_GRACE.toMillis(),
                     "limit", limit));
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                open.add(new LeftOpen(rs.getObject("id", UUID.class), rs.getObject("job_id", UUID.class),
                        rs.getString("owner"), ExecutionStatus.fromWire(rs.getString("status")), rs.getInt("attempt"),
                        rs.getInt("max_attempts"), (Integer) rs.getObject("exit_code"), rs.getString("error_code"),
                        rs.getString("error_message")));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot read the jobs left open by stopped nodes", e);
        }
        return open;
    }

    /** The sweep's look for the dashboard's changes as the nodes send it (bench/fleet times it on a big table). */
    public static SqlText dashboardWatchStatement() {
        return CHANGED_ON_DASHBOARD.sqlText();
    }

    /** A JobRunr job changed on the dashboard; {@code executionId} is the live execution it carries, if any. */
    public record DashboardChange(UUID jobId, String state, UUID executionId) {
        public boolean deleted() {
            return state.equals("DELETED");
        }
    }

    /**
     * Jobs an admin changed on the dashboard since the last look (see {@link #CHANGED_ON_DASHBOARD});
     * the mark moves on when fewer than {@code limit} came back.
     */
    public List<DashboardChange> changedOnDashboard(int limit) {
        List<DashboardChange> changes = new ArrayList<>();
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = CHANGED_ON_DASHBOARD.prepare(c, NamedSql.Args.of("limit", limit));
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                changes.add(new DashboardChange(rs.getObject("job_id", UUID.class), rs.getString("state").strip(),
                        rs.getObject("execution_id", UUID.class)));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot read the jobs changed on the dashboard", e);
        }
        if (changes.size() < limit) {
            ExecutionRows.update(dataSource, ADVANCE_WATERMARK, NamedSql.Args.of());
        }
        return changes;
    }
}
