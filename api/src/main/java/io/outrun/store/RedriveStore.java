package io.outrun.store;

import io.outrun.execution.Execution;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Getting executions back to a worker when the one that had them is gone: re-driving expired
 * leases, re-dispatching queued rows whose JobRunr job vanished, and releasing work held back for
 * its owner's cap. What the sweep and the nodes run to repair, apart from the hot path of a run,
 * so that each repair's guard (its {@code SKIP LOCKED}, its watermark, its owner lock) reads next
 * to the others. Every statement is safe to run on many nodes at once.
 */
public final class RedriveStore {

    /** The rows whose lease expired more than the grace ago; {@code :only_id} null: any. */
    private static final String EXPIRED = """
            WHERE e.status = 'running' AND e.id IN (SELECT execution_id FROM leases
              WHERE expires_at < now() - :grace_ms * interval '1 millisecond'
                AND (:only_id::uuid IS NULL OR execution_id = :only_id::uuid)
              ORDER BY expires_at LIMIT :limit FOR UPDATE SKIP LOCKED)""";

    private static final NamedSql REDISPATCH = NamedSql.of("""
            UPDATE executions SET dispatch_seq = dispatch_seq + 1, updated_at = now()
            WHERE id = :id AND status = 'queued'
            """ + ExecutionRows.RETURNING_ROW);

    private static final NamedSql REDISPATCH_LOST = NamedSql.of("""
            WITH mark AS (SELECT watermark FROM fleet_tasks WHERE name = 'sweep'),
              candidates AS (
                SELECT x.id FROM executions x, mark WHERE x.status = 'queued'
                  AND x.enqueued_at > mark.watermark - :grace_ms * interval '1 millisecond' - interval '5 seconds'
                  AND x.enqueued_at <= now() - :grace_ms * interval '1 millisecond'
                UNION
                SELECT x.id FROM jobrunr_jobs j JOIN executions x ON x.job_id = j.id::uuid AND x.status = 'queued', mark
                  WHERE j.state IN ('SUCCEEDED', 'FAILED', 'DELETED')
                  AND j.updatedAt > (mark.watermark - interval '1 minute')::timestamp),
              -- A held row has no job by design (its owner's release gives it one).
              lost AS (SELECT x.id FROM executions x WHERE x.id IN (SELECT id FROM candidates) AND x.status = 'queued'
                AND x.held_since IS NULL
                AND NOT EXISTS (SELECT 1 FROM jobrunr_jobs j WHERE j.id = x.job_id::text::bpchar
                  AND j.state IN ('AWAITING', 'SCHEDULED', 'ENQUEUED', 'PROCESSING'))
                ORDER BY x.enqueued_at LIMIT :limit FOR UPDATE SKIP LOCKED)
            UPDATE executions SET dispatch_seq = dispatch_seq + 1, enqueued_at = now(), updated_at = now()
            WHERE id IN (SELECT id FROM lost) AND status = 'queued'
            """ + ExecutionRows.RETURNING_ROW);

    private static final NamedSql ADVANCE_WATERMARK = NamedSql.of("""
            UPDATE fleet_tasks SET watermark = now() WHERE name = 'sweep'""");

    private static final NamedSql RELEASE_HELD = NamedSql.of("""
            WITH lock AS (SELECT pg_advisory_xact_lock(hashtextextended('outrun.owner:' || :owner, 0)) AS locked),
              room AS (SELECT outrun_owner_room(:owner, :default_max_running::integer, :window) AS n FROM lock),
              pick AS (SELECT id FROM executions WHERE owner = :owner AND status = 'queued' AND held_since IS NOT NULL
                AND NOT outrun_workspace_busy(id) -- V7: it would only be held again
                ORDER BY created_at, id LIMIT (SELECT n FROM room) FOR UPDATE SKIP LOCKED)
            UPDATE executions SET held_since = NULL, dispatch_seq = dispatch_seq + 1, enqueued_at = now(),
              updated_at = now() WHERE id IN (SELECT id FROM pick) AND status = 'queued'
            """ + ExecutionRows.RETURNING_ROW);

    private static final NamedSql OWNER_HAS_HELD = NamedSql.of("""
            SELECT EXISTS (SELECT 1 FROM executions WHERE owner = :owner AND status = 'queued' AND held_since IS NOT NULL)""");

    private static final NamedSql OWNERS_WITH_HELD = NamedSql.of("""
            WITH RECURSIVE o AS (
              SELECT (SELECT min(owner) FROM executions WHERE status = 'queued' AND held_since IS NOT NULL) AS owner
              UNION ALL SELECT (SELECT min(e.owner) FROM executions e WHERE e.status = 'queued'
                AND e.held_since IS NOT NULL AND e.owner > o.owner) FROM o WHERE o.owner IS NOT NULL)
            SELECT owner FROM o WHERE owner IS NOT NULL""");

    private final DataSource dataSource;

    public RedriveStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /**
     * Moves running rows whose lease expired more than {@link Lease#REDRIVE_GRACE_MS} ago (their
     * runs have killed themselves by then): re-driven while attempts remain, else reaped to
     * {@code failed} with {@code lease_expired}. Rows another sweep is handling are skipped.
     */
    public List<Redriven> redriveExpired(int limit) {
        return redriveExpired(null, limit);
    }

    /** As {@link #redriveExpired(int)}, for one execution only (the opportunistic check on a poll). */
    public List<Redriven> redriveExpired(UUID onlyId, int limit) {
        return Departure.ABANDON.apply(dataSource, EXPIRED, "lease_expired", Messages.leaseExpired(), null,
                NamedSql.Args.of("grace_ms", Lease.REDRIVE_GRACE_MS, "only_id", onlyId, "limit", limit));
    }

    /**
     * A queued execution this node will not run (it drains): a new dispatch, so that a fresh
     * JobRunr job carries it to another node. Empty when it is no longer queued.
     */
    public Optional<Execution> redispatch(UUID id) {
        return ExecutionRows.returning(dataSource, REDISPATCH, NamedSql.Args.of("id", id)).stream().findFirst();
    }

    /**
     * Queued rows whose JobRunr job is gone or ended (a node crashed between commit and enqueue,
     * or the job was deleted): bumps their dispatch so a fresh job can carry them, and returns them.
     * It looks only at what changed since the last look (the watermark of the fleet's sweep):
     * rows that turned older than {@code grace} since, and jobs that ended since (with a minute of
     * overlap for the clocks of the nodes that wrote them); never at the whole queued backlog.
     */
    public List<Execution> redispatchLost(Duration grace, int limit) {
        List<Execution> rows = ExecutionRows.returning(dataSource, REDISPATCH_LOST,
                NamedSql.Args.of("grace_ms", grace.toMillis(), "limit", limit));
        if (rows.size() < limit) {
            ExecutionRows.update(dataSource, ADVANCE_WATERMARK, NamedSql.Args.of());
        }
        return rows;
    }

    /**
     * Releases as many of an owner's held executions as it has room for now (see
     * {@code outrun_owner_room}), oldest first, each with a fresh dispatch: the caller enqueues
     * their jobs. A crash before it does is repaired like any lost dispatch. Releases of one owner
     * take its lock, so two releasers never both fill the same room.
     */
    public List<Execution> releaseHeld(String owner, Integer defaultMaxRunning, int window) {
        List<Execution> released = ExecutionRows.returning(dataSource, RELEASE_HELD,
                NamedSql.Args.of("owner", owner, "default_max_running", defaultMaxRunning, "window", window));
        // RETURNING has no order: enqueue oldest first, so JobRunr runs them in submission order.
        released.sort(Comparator.comparing(Execution::createdAt).thenComparing(Execution::id));
        return released;
    }

    /** Whether an owner has held executions now: one probe of the held index. */
    public boolean ownerHasHeld(String owner) {
        return ExecutionRows.exists(dataSource, OWNER_HAS_HELD, NamedSql.Args.of("owner", owner),
                "whether " + owner + " has held executions");
    }

    /** Owners with held executions, read from the held index one owner at a time (a skip scan). */
    public List<String> ownersWithHeld() {
        List<String> owners = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = OWNERS_WITH_HELD.prepare(c, NamedSql.Args.of());
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                owners.add(rs.getString(1));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot list owners with held executions", e);
        }
        return owners;
    }
}
