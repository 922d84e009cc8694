package io.outrun.store;

import io.outrun.execution.Execution;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * A worker's side of an execution: the claim that makes its lease, and every write fenced by
 * that lease (the end, giving the run back). Kept apart from what owners and the sweep write
 * because these are the statements whose fence keeps two attempts from both writing: read them
 * together. Zero rows is a normal answer here: the lease was lost, and the caller writes nothing
 * more. Every time is the database's {@code now()}.
 */
public final class LeaseStore {

    /** Hand-backs (sandbox refused to start the run) after which an execution fails instead. */
    public static final int MAX_HANDBACKS = 20;

    /**
     * The claim: up to {@code :slots} queued executions for this node, fairly. Each slot goes to
     * the owner with the fewest running executions fleet-wide (its rank: running + its place in
     * its own queue, oldest first; ties: oldest work first), so another owner's first execution
     * takes the first slot that frees, and a lone owner fills every slot. Owners are walked by a
     * skip scan of the queued index and each gives at most the rows it may take by this
     * statement's snapshot, without a lock. Running caps are then made exact for the owners picked
     * only ({@code outrun_owner_free}: the owner's lock, taken in owner order, and a fresh count),
     * and workspace exclusivity (runs of a busy workspace are skipped, one run per workspace per
     * batch, and {@code outrun_workspace_free} re-checks under the workspace's lock) is a condition
     * of the same statement. The picked rows are locked {@code SKIP LOCKED}: a row another node is claiming
     * is left to it ({@code picked} greater than what was claimed tells the caller to look again).
     * Each claimed row takes a new lease epoch (never reused) under the node's incarnation, its
     * lease row, and a NOTIFY for live readers. {@code :only_id} (tests): claim that row only.
     */
    private static final NamedSql CLAIM = NamedSql.of("""
            WITH RECURSIVE queued_owners(owner) AS (
                SELECT (SELECT q.owner FROM executions q WHERE q.status = 'queued'
                  AND (:only_id::uuid IS NULL OR q.id = :only_id::uuid) ORDER BY q.owner LIMIT 1)
              UNION ALL
                SELECT (SELECT q.owner FROM executions q WHERE q.status = 'queued' AND q.owner > o.owner
                  AND (:only_id::uuid IS NULL OR q.id = :only_id::uuid) ORDER BY q.owner LIMIT 1)
                FROM queued_owners o WHERE o.owner IS NOT NULL),
              -- Each owner's running count and cap as this statement's snapshot sees them: no lock yet.
              owner_state AS (SELECT o.owner,
                  (SELECT count(*) FROM executions r WHERE r.owner = o.owner AND r.status = 'running') AS running,
                  coalesce((SELECT w.max_running FROM owners w WHERE w.owner = o.owner), :default_max_running::integer) AS cap,
                  -- V7: the workspaces the owner runs now, read once per owner
                  ARRAY(SELECT bi.workspace FROM executions b JOIN execution_inputs bi ON bi.execution_id = b.id
                    WHERE b.owner = o.owner AND b.status = 'running' AND bi.workspace IS NOT NULL) AS busy
                FROM queued_owners o WHERE o.owner IS NOT NULL),
              candidates AS (SELECT o.owner, o.cap, c.id, c.workspace, c.enqueued_at, o.running + c.place AS rank
                FROM owner_state o CROSS JOIN LATERAL (
                  SELECT q.id, q.enqueued_at, i.workspace, row_number() OVER (ORDER BY q.enqueued_at, q.id) AS place
                  FROM executions q LEFT JOIN execution_inputs i ON i.execution_id = q.id
                  WHERE q.owner = o.owner AND q.status = 'queued' AND q.enqueued_at <= now()
                    AND q.cancel_requested_at IS NULL AND q.attempt < q.max_attempts + q.retries
                    AND (:only_id::uuid IS NULL OR q.id = :only_id::uuid)
                    AND (i.workspace IS NULL OR i.workspace <> ALL (o.busy))
                  ORDER BY q.enqueued_at, q.id
                  LIMIT CASE WHEN o.cap IS NULL THEN :slots ELSE greatest(least(o.cap - o.running, :slots), 0) END) c),
              picked AS (SELECT w.owner, w.cap, w.id, w.rank, w.enqueued_at FROM (SELECT c.*, row_number() OVER (
                    PARTITION BY c.owner, c.workspace ORDER BY c.rank, c.enqueued_at, c.id) AS nth FROM candidates c) w
                WHERE w.workspace IS NULL OR w.nth = 1
                ORDER BY w.rank, w.enqueued_at, w.id LIMIT :slots),
              -- Exact caps, for the few owners picked only: each capped one's lock is taken (in owner
              -- order, so concurrent claims never deadlock on them) and its running counted again.
              capped AS (SELECT s.owner, outrun_owner_free(s.owner, :default_max_running::integer, s.n::integer) AS free
                FROM (SELECT owner, count(*) AS n FROM picked WHERE cap IS NOT NULL GROUP BY owner ORDER BY owner OFFSET 0) s),
              allowed AS (SELECT p.id FROM (SELECT p.*, row_number() OVER (PARTITION BY p.owner
                    ORDER BY p.rank, p.enqueued_at, p.id) AS k FROM picked p) p LEFT JOIN capped c ON c.owner = p.owner
                WHERE p.cap IS NULL OR p.k <= c.free),
              locked AS (SELECT e.id FROM executions e WHERE e.id IN (SELECT id FROM allowed) AND e.status = 'queued'
                FOR UPDATE SKIP LOCKED),
              claimed AS (UPDATE executions SET status = 'running', attempt = attempt + 1,
                lease_epoch = lease_epoch + 1, lease_owner = :owner, prev_output_epoch = output_epoch,
                output_epoch = lease_epoch + 1, started_at = now(), updated_at = now(), exit_code = NULL,
                error_code = NULL, error_message = NULL, stdout_total_bytes = 0, stderr_total_bytes = 0,
                stdout_truncated = false, stderr_truncated = false
                WHERE id IN (SELECT id FROM locked WHERE outrun_workspace_free(id)) AND status = 'queued'
                RETURNING id, owner, command, image, workdir, env::text AS env_json, labels::text AS labels_json,
              timeout_ms, max_output_bytes, status, attempt, max_attempts, lease_owner, lease_epoch, output_epoch,
              cancel_requested_at, idempotency_key, dispatch_seq, job_id, enqueued_at, created_at, started_at, finished_at,
              exit_code, error_code, error_message, stdout_total_bytes, stderr_total_bytes, stdin, stdin_bytes,
              stdin_closed_at, memory_mb, cpu_millis, pids, tmpfs_mb, network, starts_at,
              retry_max, retry_backoff_ms, retry_on, retries, last_failure, traceparent, tracestate),
              lease AS (INSERT INTO leases (execution_id, epoch, owner, expires_at)
                SELECT id, lease_epoch, lease_owner, now() + :ttl_ms * interval '1 millisecond' FROM claimed
                ON CONFLICT (execution_id) DO UPDATE SET epoch = EXCLUDED.epoch, owner = EXCLUDED.owner,
                expires_at = EXCLUDED.expires_at, renewed_at = now(), cancel_requested = false
                RETURNING execution_id, expires_at)
            -- One row at least, so that an empty claim still says how many it picked, and whether
            -- queued work is left (capped, on a busy workspace, paused, or beyond the free slots).
            SELECT won.*, (SELECT count(*) FROM picked) AS picked,
              EXISTS (SELECT 1 FROM executions q WHERE q.status = 'queued' AND q.enqueued_at <= now()
                AND q.id NOT IN (SELECT id FROM locked)) AS more,
              -- When the next queued row that is not claimable yet becomes so (a delayed start, a
              -- paused hand-back): the node looks then, not at its next poll. The queued index's first row.
              (SELECT ceil(extract(epoch FROM min(q.enqueued_at) - now()) * 1000)::int8 FROM executions q
                WHERE q.status = 'queued' AND q.enqueued_at > now()) AS next_due_ms
            FROM (SELECT 1) one LEFT JOIN (
              SELECT claimed.*, lease.expires_at AS lease_expires_at, NULL::int8 AS stdout_end,
                NULL::int8 AS stderr_end, NULL::text AS webhook_json, pg_notify('outrun_changed', claimed.id::text) AS notified,
                -- Only a run with inputs (V7) costs the node a read of them.
                EXISTS (SELECT 1 FROM execution_inputs i WHERE i.execution_id = claimed.id) AS has_inputs
              FROM claimed JOIN lease ON lease.execution_id = claimed.id) won ON true""");

    /**
     * A run's end, fenced as {@link Departure.Rows#BY_LEASE} says: past its lease's expiry the
     * run's kill switch may have fired, and its end and last output land together or not at all.
     */
    private static final NamedSql FINISH = NamedSql.of("""
            WITH ended AS (UPDATE executions e SET status = :status, exit_code = :exit_code, error_code = :error_code,
                -- An operator's cancel recorded its own message (SubmissionStore.requestCancelAsOperator).
                error_message = CASE WHEN :status = 'cancelled' AND e.cancel_requested_at IS NOT NULL
                  AND e.error_message IS NOT NULL THEN e.error_message ELSE :error_message END, stdout_total_bytes = :stdout_total, stderr_total_bytes = :stderr_total,
                stdout_truncated = :stdout_total > max_output_bytes / 2 + (max_output_bytes - max_output_bytes / 2),
                stderr_truncated = :stderr_total > max_output_bytes / 2 + (max_output_bytes - max_output_bytes / 2),
                finished_at = now(), updated_at = now(), lease_owner = NULL
                WHERE e.id = :id AND e.lease_epoch = :epoch AND e.status = 'running'
              AND EXISTS (SELECT 1 FROM leases l WHERE l.execution_id = e.id AND l.epoch = e.lease_epoch
                AND l.expires_at > now())
                RETURNING id, owner, output_epoch),
              -- Earlier attempts' output is no longer shown by anyone: drop it with the end.
              old AS (DELETE FROM execution_output o USING ended WHERE o.execution_id = ended.id
                AND o.epoch <> ended.output_epoch)
            -- The end and its NOTIFY (long polls answer at once) in one round trip, and whether work
            -- of the owner may have been held back by what this end releases (its running cap, or
            -- this run's workspace), which the freed slot may take now. Work held by neither was
            -- offered to a node when it was queued.
            SELECT pg_notify('outrun_changed', id::text), EXISTS (SELECT 1 FROM executions q WHERE q.owner = ended.owner
                AND q.status = 'queued' AND q.enqueued_at <= now())
              AND (coalesce((SELECT w.max_running FROM owners w WHERE w.owner = ended.owner),
                  :default_max_running::integer) IS NOT NULL
                OR EXISTS (SELECT 1 FROM execution_inputs i WHERE i.execution_id = ended.id AND i.workspace IS NOT NULL))
              AS owner_queued FROM ended""");

    private static final NamedSql EXPIRE_LEASES = NamedSql.of("""
            UPDATE leases SET expires_at = now() - :ms * interval '1 millisecond' WHERE owner = :incarnation""");

    private static final NamedSql CANCEL_BEFORE_RETRY = NamedSql.of("""
            SELECT cancel_requested_at IS NOT NULL FROM executions
             WHERE id = :id AND lease_epoch = :epoch AND status = 'running' FOR UPDATE""");

    private static final NamedSql IS_STALE_RUN = NamedSql.of("""
            SELECT EXISTS (SELECT 1 FROM executions WHERE id = :id) AND NOT EXISTS (SELECT 1 FROM leases
              WHERE execution_id = :id AND epoch = :epoch AND owner <> :incarnation
                AND expires_at > now() - :grace_ms * interval '1 millisecond')""");

    private final DataSource dataSource;

    public LeaseStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** The claim as the nodes send it (bench/fleet times it on a big table). */
    public static SqlText claimStatement() {
        return CLAIM.sqlText();
    }

    /** A claimed execution, and whether it has inputs (files, artifacts, a workspace) to read. */
    public record Claimed(Execution execution, boolean hasInputs) {
    }

    /**
     * What one claim did: the executions it won, how many it picked before locking them
     * ({@code picked > claimed().size()}: another node was claiming some of the same rows at that
     * moment, so more may be claimable now), and whether other queued work is left ({@code more}:
     * the next run's end may let some of it start: an owner's cap, a workspace, a free slot).
     */
    /**
     * What one claim got: the rows won, how many it picked (more than won: another node took
     * some), whether queued work is left, and in how many ms the next queued row that is not
     * claimable yet becomes so (null: none).
     */
    public record Batch(List<Claimed> claimed, int picked, boolean more, Long nextDueMs) {
        public boolean contended() {
            return picked > claimed.size();
        }
    }

    /**
     * Claims up to {@code slots} queued executions for the node incarnation {@code owner}, fairly
     * between owners, under running caps ({@code owners.max_running}, else
     * {@code defaultMaxRunning}; null: none) and workspace exclusivity: see {@link #CLAIM}. One
     * statement, so at most one node ever wins a row and no owner ever runs more than its cap.
     */
    public Batch claim(String owner, int slots, Duration ttl, Integer defaultMaxRunning) {
        return claim(null, owner, slots, ttl, defaultMaxRunning);
    }

    /** Claims this very execution if it is claimable now (tests and tools); empty otherwise. */
    public Optional<Execution> claim(UUID id, String owner, Duration ttl) {
        return claim(id, owner, ttl, null);
    }

    /** As {@link #claim(UUID, String, Duration)}, under the operator's default running cap. */
    public Optional<Execution> claim(UUID id, String owner, Duration ttl, Integer defaultMaxRunning) {
        return claim(id, owner, 1, ttl, defaultMaxRunning).claimed().stream().findFirst().map(Claimed::execution);
    }

    private Batch claim(UUID onlyId, String owner, int slots, Duration ttl, Integer defaultMaxRunning) {
        NamedSql.Args args = NamedSql.Args.of("only_id", onlyId, "default_max_running", defaultMaxRunning, "owner", owner)
                .and("slots", slots)
                .and("ttl_ms", ttl.toMillis());
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = CLAIM.prepare(c, args)) {
            ps.setQueryTimeout(ExecutionRows.WRITE_TIMEOUT_S);
            List<Claimed> won = new java.util.ArrayList<>();
            int picked = 0;
            boolean more = false;
            Long nextDueMs = null;
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    picked = rs.getInt("picked");
                    more = rs.getBoolean("more");
                    nextDueMs = (Long) rs.getObject("next_due_ms");
                    if (rs.getObject("id") != null) {
                        won.add(new Claimed(ExecutionRows.map(rs, null), rs.getBoolean("has_inputs")));
                    }
                }
            }
            return new Batch(won, picked, more, nextDueMs);
        } catch (SQLException e) {
            throw new StoreException("cannot claim executions for " + owner, e);
        }
    }

    /**
     * What writing an end did: {@code written} false when the lease was lost (the sweep re-drove
     * or reaped the row: the caller must write nothing more); {@code ownerQueued} when the
     * execution's owner has queued work, which the slot this run frees may take.
     */
    public record Finish(boolean written, boolean ownerQueued) {
    }

    /** Writes an attempt's end under its lease, with its last output, in one transaction. */
    public Finish finish(Lease lease, Outcome outcome) {
        return finish(lease, outcome, null);
    }

    /**
     * As {@link #finish(Lease, Outcome)}, under the operator's default running cap (null: none),
     * which tells whether the end may release held-back work of the owner.
     */
    public Finish finish(Lease lease, Outcome outcome, Integer defaultMaxRunning) {
        NamedSql.Args args = NamedSql.Args.of("status", outcome.status().wire(), "exit_code", outcome.exitCode(),
                        "error_code", outcome.errorCode())
                .and("error_message", outcome.errorMessage())
                .and("stdout_total", outcome.stdoutTotal())
                .and("stderr_total", outcome.stderrTotal())
                .and("id", lease.executionId())
                .and("epoch", lease.epoch())
                .and("default_max_running", defaultMaxRunning);
        boolean withOutput = outcome.output() != null && !outcome.output().chunks().isEmpty();
        try (Connection c = dataSource.getConnection()) {
            // With nothing left to append, the end is one statement (no transaction around it).
            c.setAutoCommit(!withOutput);
            try {
                if (withOutput) {
                    // Fenced by the lease row, which the end's trigger removes: append first.
                    OutputStore.append(c, lease.owner(), List.of(outcome.output()));
                }
                boolean ended;
                boolean ownerQueued = false;
                try (PreparedStatement ps = FINISH.prepare(c, args)) {
                    ps.setQueryTimeout(ExecutionRows.WRITE_TIMEOUT_S);
                    try (ResultSet rs = ps.executeQuery()) {
                        ended = rs.next();
                        if (ended) {
                            ownerQueued = rs.getBoolean("owner_queued");
                        }
                    }
                }
                if (withOutput) {
                    if (ended) {
                        c.commit();
                    } else {
                        c.rollback();
                    }
                }
                return new Finish(ended, ownerQueued);
            } catch (SQLException e) {
                if (withOutput) {
                    c.rollback();
                }
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        } catch (SQLException e) {
            throw new StoreException("cannot finish execution " + lease.executionId(), e);
        }
    }

    /**
     * Hands back a claim whose command never started (the sandbox refused it, e.g. the Docker
     * engine was restarting): no attempt spent, the previous output shown again, back to
     * {@code queued} under a new dispatch; {@code cancelled} when its owner asked meanwhile;
     * {@code failed} with {@code sandbox_error} after {@link #MAX_HANDBACKS} hand-backs, so an
     * execution no sandbox can start ends with a reason. The epoch is never given back.
     *
     * @param why   what the sandbox said, kept in the error message if the execution fails
     * @param pause how long the execution waits before a node may claim it again
     * @return the new state, or empty when the lease was already lost
     */
    public Optional<Redriven> handBack(Lease lease, String why, Duration pause) {
        return Departure.HAND_BACK.applyOne(dataSource, Departure.Rows.BY_LEASE, "sandbox_error", Messages.handBackFailed(), why,
                fence(lease, pause));
    }

    /**
     * Hands a started run back because its node drains (a rolling deploy): its run was killed,
     * no attempt is spent (the command did nothing wrong), and it is re-driven at once; a cancel
     * request ends it {@code cancelled}.
     *
     * @return the new state, or empty when the lease was already lost
     */
    public Optional<Redriven> drainBack(Lease lease) {
        return Departure.DRAIN.applyOne(dataSource, Departure.Rows.BY_LEASE, "sandbox_error", "%7$s", "drained", fence(lease, Duration.ZERO));
    }

    /**
     * Abandons a started attempt because this node cannot run it (its sandbox lost it, e.g. the
     * Docker engine restarted): re-driven for another attempt, claimable after {@code pause},
     * while any remain, else {@code failed} with {@code errorCode}.
     *
     * @return the new state, or empty when the lease was already lost
     */
    public Optional<Redriven> abandon(Lease lease, String errorCode, String errorMessage, Duration pause) {
        return Departure.ABANDON.applyOne(dataSource, Departure.Rows.BY_LEASE, errorCode, "%7$s", errorMessage, fence(lease, pause));
    }

    /**
     * What a retry's write did: {@code moved} the new state (empty: the lease was already lost),
     * or {@code cancelRequested}: its owner asked for a cancel, nothing was written, and the
     * attempt's end is to be written as it ended.
     */
    public record Retried(Optional<Redriven> moved, boolean cancelRequested) {
    }

    /**
     * Re-queues an attempt that failed with {@code outcome} for a retry its execution asked for
     * (issue 28), after {@code pause}, with its last output appended in the same transaction (so
     * the failed attempt's output stays readable until the retry starts); a cancel request ends
     * it as the attempt ended instead (see {@link Retried}). {@code why} is kept as the
     * execution's last failure.
     */
    public Retried retry(Lease lease, Outcome outcome, String why, Duration pause) {
        boolean withOutput = outcome.output() != null && !outcome.output().chunks().isEmpty();
        try (Connection c = dataSource.getConnection()) {
            return Transaction.on(c, tx -> {
                // An owner's cancel that landed as the attempt failed: no retry, and the attempt's
                // end is written as it ended (the caller writes it), exit code and all.
                try (PreparedStatement ps = CANCEL_BEFORE_RETRY.prepare(tx,
                        NamedSql.Args.of("id", lease.executionId(), "epoch", lease.epoch()))) {
                    try (ResultSet rs = ps.executeQuery()) {
                        if (rs.next() && rs.getBoolean(1)) {
                            return Transaction.Result.rollback(new Retried(Optional.empty(), true));
                        }
                    }
                }
                if (withOutput) {
                    OutputStore.append(tx, lease.owner(), List.of(outcome.output()));
                }
                Optional<Redriven> moved = Departure.RETRY.apply(tx, Departure.Rows.BY_LEASE, outcome.errorCode(), "%7$s", why,
                        fence(lease, pause)).stream().findFirst();
                return new Transaction.Result<>(new Retried(moved, false), moved.isPresent()); // a lost lease writes nothing
            });
        } catch (SQLException e) {
            throw new StoreException("cannot re-queue execution " + lease.executionId() + " for a retry", e);
        }
    }

    /**
     * At a graceful stop, once this incarnation's runs are dead: expires its leases past the grace,
     * so the sweep re-drives them at once.
     */
    public int expireLeases(String incarnation) {
        return ExecutionRows.update(dataSource, EXPIRE_LEASES,
                NamedSql.Args.of("ms", Lease.REDRIVE_GRACE_MS + 1, "incarnation", incarnation));
    }

    /**
     * True when the run (execution, epoch) found on this machine is a leftover: its execution is
     * ours (the row exists) and no other incarnation holds that very epoch's lease, live or
     * within the re-drive grace. An unknown execution belongs to another fleet sharing the
     * machine and is never touched. (The caller keeps the runs it tracks itself.)
     */
    public boolean isStaleRun(UUID id, long epoch, String incarnation) {
        NamedSql.Args args = NamedSql.Args.of("id", id, "epoch", epoch, "incarnation", incarnation)
                .and("grace_ms", Lease.REDRIVE_GRACE_MS);
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = IS_STALE_RUN.prepare(c, args);
             ResultSet rs = ps.executeQuery()) {
            return rs.next() && rs.getBoolean(1);
        } catch (SQLException e) {
            throw new StoreException("cannot check run " + epoch + " of execution " + id, e);
        }
    }

    private static NamedSql.Args fence(Lease lease, Duration pause) {
        return NamedSql.Args.of("id", lease.executionId(), "epoch", lease.epoch(), "delay_ms", pause.toMillis());
    }
}
