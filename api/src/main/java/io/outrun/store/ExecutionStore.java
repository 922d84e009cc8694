package io.outrun.store;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.execution.Execution;
import io.outrun.execution.ExecutionStatus;
import io.outrun.execution.Submission;
import io.outrun.sandbox.capture.Captured;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The {@code executions} table. Every state change is one guarded statement whose row count is
 * the answer: zero rows is a normal outcome ("someone else has it", "the lease is gone"), not an
 * error. Worker writes are fenced by {@link Lease}. Every time is the database's {@code now()}.
 */
public final class ExecutionStore {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final TypeReference<Map<String, String>> STRING_MAP = new TypeReference<>() { };

    /** The row's own columns, as every query and RETURNING names them. */
    private static final String ROW = "id, owner, command, image, workdir, env::text AS env_json, labels::text AS labels_json,"
            + " timeout_ms, max_output_bytes, status, attempt, max_attempts, lease_owner, lease_epoch, output_epoch,"
            + " cancel_requested_at, idempotency_key, dispatch_seq, job_id, held_since, created_at, started_at, finished_at,"
            + " exit_code, error_code, error_message, stdout_total_bytes, stderr_total_bytes";
    /** A row as read: its lease's expiry and, while it runs, how far each stream's stored output reaches. */
    private static final String READ = "SELECT e." + ROW.replace(", ", ", e.")
            + ", l.expires_at AS lease_expires_at,"
            + " (SELECT o.end_offset FROM execution_output o WHERE o.execution_id = e.id AND o.epoch = e.output_epoch"
            + "   AND o.stream = 1 ORDER BY o.start_offset DESC LIMIT 1) AS stdout_end,"
            + " (SELECT o.end_offset FROM execution_output o WHERE o.execution_id = e.id AND o.epoch = e.output_epoch"
            + "   AND o.stream = 2 ORDER BY o.start_offset DESC LIMIT 1) AS stderr_end"
            + " FROM executions e LEFT JOIN leases l ON l.execution_id = e.id";
    /** RETURNING of a row that has no lease and no output yet (a new or just-claimed row). */
    private static final String RETURNING_ROW = " RETURNING " + ROW
            + ", NULL::timestamptz AS lease_expires_at, NULL::int8 AS stdout_end, NULL::int8 AS stderr_end";

    /** Hand-backs (sandbox refused to start the run) after which an execution fails instead. */
    public static final int MAX_HANDBACKS = 20;
    /**
     * A worker's own run, still running under a lease that has not expired: the fence of its end,
     * hand back, drain back and release. Past expiry the run's kill switch may have fired: its end
     * and its last output land together, or not at all (the sweep then decides).
     */
    private static final String FENCE = " e.id = ? AND e.lease_epoch = ? AND e.status = 'running'"
            + " AND EXISTS (SELECT 1 FROM leases l WHERE l.execution_id = e.id AND l.epoch = e.lease_epoch"
            + " AND l.expires_at > now())";

    private final DataSource dataSource;

    public ExecutionStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    public DataSource dataSource() {
        return dataSource;
    }

    /** The row a submission made, and whether this call made it (false: idempotent repeat). */
    public record Inserted(Execution execution, boolean created) {
    }

    /** Stores a submission that is never held (its caller enqueues it): what tests and tools use. */
    public Inserted insert(Submission s) {
        return insert(s, null, 0);
    }

    /**
     * Stores a submission. It is held (queued outside JobRunr's queue: its caller must not
     * enqueue it) when its owner already has {@code window} executions in JobRunr's queue, or
     * as many running and dispatched as its running cap ({@code owners.max_running}, else
     * {@code defaultMaxRunning}; null: none). A window of 0 never holds. The count is not locked: a burst may put a few more
     * in the queue than the window, which costs fairness a little, never the cap (the claim checks it).
     */
    public Inserted insert(Submission s, Integer defaultMaxRunning, int window) {
        String sql = "INSERT INTO executions (id, owner, command, image, workdir, env, labels, timeout_ms,"
                + " max_output_bytes, max_attempts, idempotency_key, held_since)"
                + " VALUES (?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, ?, ?,"
                + (window > 0 ? " CASE WHEN outrun_owner_room(?, ?::integer, ?) > 0 THEN NULL ELSE now() END)" : " NULL)")
                + " ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
                + RETURNING_ROW;
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setObject(1, UUID.randomUUID());
            ps.setString(2, s.owner());
            ps.setString(3, s.command());
            ps.setString(4, s.image());
            ps.setString(5, s.workdir());
            ps.setString(6, json(s.env()));
            ps.setString(7, json(s.labels()));
            ps.setLong(8, s.timeoutMs());
            ps.setInt(9, s.maxOutputBytes());
            ps.setInt(10, s.maxAttempts());
            ps.setString(11, s.idempotencyKey());
            if (window > 0) {
                ps.setString(12, s.owner());
                ps.setObject(13, defaultMaxRunning, java.sql.Types.INTEGER);
                ps.setInt(14, window);
            }
            // With inputs (files, artifacts, workspace) the row and its inputs commit together.
            boolean withInputs = !s.inputs().isEmpty();
            if (withInputs) {
                c.setAutoCommit(false);
            }
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    Execution inserted = map(rs, null);
                    if (withInputs) {
                        insertInputs(c, inserted.id(), s.inputs());
                        c.commit();
                    }
                    return new Inserted(inserted, true);
                }
            } catch (SQLException | RuntimeException e) {
                if (withInputs) {
                    c.rollback();
                }
                throw e;
            } finally {
                if (withInputs && !c.getAutoCommit()) {
                    c.rollback(); // nothing left to commit on the idempotent path; the pool wants autocommit back
                    c.setAutoCommit(true);
                }
            }
        } catch (SQLException e) {
            throw new StoreException("cannot store a new execution for owner " + s.owner(), e);
        }
        return new Inserted(findByIdempotencyKey(s.owner(), s.idempotencyKey()).orElseThrow(
                () -> new StoreException("idempotency key conflict without a row for owner " + s.owner(), null)), false);
    }

    /** A submission's files, artifacts and workspace (V7 {@code execution_inputs}), in the insert's transaction. */
    private static void insertInputs(Connection c, UUID id, io.outrun.execution.RunInputs inputs) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO execution_inputs (execution_id, files_tar, artifacts, workspace) VALUES (?, ?, ?::jsonb, ?)")) {
            ps.setObject(1, id);
            ps.setBytes(2, inputs.filesTar());
            ps.setString(3, JSON.writeValueAsString(inputs.artifacts()));
            ps.setString(4, inputs.workspace());
            ps.executeUpdate();
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The execution an owner submitted with this idempotency key, without its output. */
    public Optional<Execution> findByIdempotencyKey(String owner, String idempotencyKey) {
        return read(" WHERE e.owner = ? AND e.idempotency_key = ?", OutputStore.Read.NONE, owner, idempotencyKey);
    }

    /** An execution with all its kept output. */
    public Optional<Execution> find(UUID id) {
        return read(" WHERE e.id = ?", OutputStore.Read.ALL, id);
    }

    /** An execution with the output {@code read} asks for (none, all, or after a cursor). */
    public Optional<Execution> find(UUID id, OutputStore.Read read) {
        return read(" WHERE e.id = ?", read, id);
    }

    /** An owner's execution with all its kept output; someone else's answers exactly like a missing one. */
    public Optional<Execution> findOwned(UUID id, String owner) {
        return findOwned(id, owner, OutputStore.Read.ALL);
    }

    /** An owner's execution with the output {@code read} asks for (none, all, or after a cursor). */
    public Optional<Execution> findOwned(UUID id, String owner, OutputStore.Read read) {
        return read(" WHERE e.id = ? AND e.owner = ?", read, id, owner);
    }

    /** Only the state of an owner's execution: what a waiting poll re-reads, without its output. */
    public Optional<ExecutionStatus> statusOwned(UUID id, String owner) {
        String sql = "SELECT status FROM executions WHERE id = ? AND owner = ?";
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, id, owner);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(ExecutionStatus.fromWire(rs.getString(1))) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new StoreException("cannot read the status of execution " + id, e);
        }
    }

    /**
     * Claims a queued execution for the node incarnation {@code owner}, with no running cap but
     * the owners table's. Empty: someone else has it, it was cancelled, it is gone, or held.
     */
    public Optional<Execution> claim(UUID id, String owner, Duration ttl) {
        return claim(id, owner, ttl, null).execution();
    }

    /**
     * What a claim did: {@code execution} is present when it won; {@code held} when the
     * execution's owner was at its running cap, so the execution was held instead (released when
     * a slot of that owner frees); {@code ownerHasHeld} when the owner has held work waiting, which
     * the claimer releases as it takes a slot and as its run ends.
     */
    public record Claim(Optional<Execution> execution, boolean held, boolean ownerHasHeld) {
    }

    /**
     * Claims a queued execution for the node incarnation {@code owner}: one guarded statement, so at
     * most one worker ever wins a claim, and no owner ever runs more than its cap (checked in the
     * same statement under the owner's lock: see {@code outrun_owner_may_run}). It takes a new
     * lease epoch (never reused), makes the lease row, and points the shown output at the new
     * epoch. A claim refused by the cap holds the execution instead, in the same statement.
     *
     * @param defaultMaxRunning the operator's cap for owners without their own; null: none
     */
    public Claim claim(UUID id, String owner, Duration ttl, Integer defaultMaxRunning) {
        String sql = "WITH target AS (SELECT id, owner FROM executions WHERE id = ? AND status = 'queued'"
                + "   AND held_since IS NULL AND cancel_requested_at IS NULL AND attempt < max_attempts FOR UPDATE),"
                // V7: a run of a workspace another run has is held too, until that one saved it.
                + " gate AS (SELECT id, owner, outrun_owner_may_run(owner, ?::integer) AND outrun_workspace_free(id) AS ok"
                + "   FROM target),"
                + " claimed AS (UPDATE executions SET status = 'running', attempt = attempt + 1,"
                + " lease_epoch = lease_epoch + 1, lease_owner = ?, prev_output_epoch = output_epoch,"
                + " output_epoch = lease_epoch + 1, started_at = now(), updated_at = now(), exit_code = NULL,"
                + " error_code = NULL, error_message = NULL, stdout_total_bytes = 0, stderr_total_bytes = 0,"
                + " stdout_truncated = false, stderr_truncated = false"
                + " WHERE id IN (SELECT id FROM gate WHERE ok)"
                + " RETURNING " + ROW + "),"
                + " held AS (UPDATE executions SET held_since = now(), updated_at = now()"
                + "   WHERE id IN (SELECT id FROM gate WHERE NOT ok) RETURNING id),"
                + " lease AS (INSERT INTO leases (execution_id, epoch, owner, expires_at)"
                + "   SELECT id, lease_epoch, lease_owner, now() + ? * interval '1 millisecond' FROM claimed"
                + "   ON CONFLICT (execution_id) DO UPDATE SET epoch = EXCLUDED.epoch, owner = EXCLUDED.owner,"
                + "   expires_at = EXCLUDED.expires_at, renewed_at = now(), cancel_requested = false RETURNING expires_at)"
                // The claim and its NOTIFY (live readers see "running") in one round trip; one row
                // always, so a refusal says whether it held the execution.
                + " SELECT claimed.*, (SELECT expires_at FROM lease) AS lease_expires_at, NULL::int8 AS stdout_end,"
                + " NULL::int8 AS stderr_end, pg_notify('" + Channels.CHANGED + "', claimed.id::text) AS notified,"
                + " EXISTS (SELECT 1 FROM held) AS was_held,"
                + " EXISTS (SELECT 1 FROM executions h, gate WHERE h.owner = gate.owner AND h.status = 'queued'"
                + "   AND h.held_since IS NOT NULL AND h.id <> gate.id) AS owner_has_held"
                + " FROM (SELECT 1) one LEFT JOIN claimed ON true";
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, id, defaultMaxRunning, owner, ttl.toMillis());
            ps.setQueryTimeout(WRITE_TIMEOUT_S);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                Optional<Execution> won = rs.getObject("id") == null ? Optional.empty() : Optional.of(map(rs, null));
                return new Claim(won, rs.getBoolean("was_held"), rs.getBoolean("owner_has_held"));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot claim execution " + id, e);
        }
    }

    /** Seconds a worker's own write may take before it is cancelled (the database answers or not). */
    static final int WRITE_TIMEOUT_S = 10;

    /**
     * Writes an attempt's end under its lease, with its last output, in one transaction. False:
     * the lease was lost (the sweep re-drove or reaped the row); the caller must write nothing more.
     */
    public boolean finish(Lease lease, Outcome outcome) {
        String sql = "WITH ended AS (UPDATE executions e SET status = ?, exit_code = ?, error_code = ?, error_message = ?,"
                + " stdout_total_bytes = ?, stderr_total_bytes = ?,"
                + " stdout_truncated = ? > max_output_bytes / 2 + (max_output_bytes - max_output_bytes / 2),"
                + " stderr_truncated = ? > max_output_bytes / 2 + (max_output_bytes - max_output_bytes / 2),"
                + " finished_at = now(), updated_at = now(), lease_owner = NULL"
                + " WHERE" + FENCE + " RETURNING id, output_epoch),"
                // Earlier attempts' output is no longer shown by anyone: drop it with the end.
                + " old AS (DELETE FROM execution_output o USING ended WHERE o.execution_id = ended.id"
                + "   AND o.epoch <> ended.output_epoch)"
                // The end and its NOTIFY (long polls answer at once) in one round trip.
                + " SELECT pg_notify('" + Channels.CHANGED + "', id::text) FROM ended";
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
                try (PreparedStatement ps = c.prepareStatement(sql)) {
                    ps.setQueryTimeout(WRITE_TIMEOUT_S);
                    ps.setString(1, outcome.status().wire());
                    ps.setObject(2, outcome.exitCode());
                    ps.setString(3, outcome.errorCode());
                    ps.setString(4, outcome.errorMessage());
                    ps.setLong(5, outcome.stdoutTotal());
                    ps.setLong(6, outcome.stderrTotal());
                    ps.setLong(7, outcome.stdoutTotal());
                    ps.setLong(8, outcome.stderrTotal());
                    ps.setObject(9, lease.executionId());
                    ps.setLong(10, lease.epoch());
                    try (ResultSet rs = ps.executeQuery()) {
                        ended = rs.next();
                    }
                }
                if (withOutput) {
                    if (ended) {
                        c.commit();
                    } else {
                        c.rollback();
                    }
                }
                return ended;
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
     * @param why what the sandbox said, kept in the error message if the execution fails
     * @return the new state, or empty when the lease was already lost
     */
    public Optional<Redriven> handBack(Lease lease, String why) {
        return depart(Departure.HAND_BACK, " WHERE" + FENCE, "sandbox_error", Messages.handBackFailed(), why,
                lease.executionId(), lease.epoch());
    }

    /**
     * Hands a started run back because its node drains (a rolling deploy): its run was killed,
     * no attempt is spent (the command did nothing wrong), and it is re-driven at once; a cancel
     * request ends it {@code cancelled}.
     *
     * @return the new state, or empty when the lease was already lost
     */
    public Optional<Redriven> drainBack(Lease lease) {
        return depart(Departure.DRAIN, " WHERE" + FENCE, "sandbox_error", "%7$s", "drained",
                lease.executionId(), lease.epoch());
    }

    /**
     * A queued execution this node will not run (it drains): a new dispatch, so that a fresh
     * JobRunr job carries it to another node. Empty when it is no longer queued.
     */
    public Optional<Execution> redispatch(UUID id) {
        return query("UPDATE executions SET dispatch_seq = dispatch_seq + 1, updated_at = now()"
                + " WHERE id = ? AND status = 'queued'" + RETURNING_ROW, id).stream().findFirst();
    }

    /**
     * Gives a started attempt up because this node cannot run it (its sandbox lost it, e.g. the
     * Docker engine restarted): re-driven for another attempt while any remain, else
     * {@code failed} with {@code errorCode}.
     *
     * @return the new state, or empty when the lease was already lost
     */
    public Optional<Redriven> release(Lease lease, String errorCode, String errorMessage) {
        return depart(Departure.ABANDON, " WHERE" + FENCE, errorCode, "%7$s", errorMessage,
                lease.executionId(), lease.epoch());
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
        String where = " WHERE e.status = 'running' AND e.id IN (SELECT execution_id FROM leases"
                + "   WHERE expires_at < now() - ? * interval '1 millisecond' AND (?::uuid IS NULL OR execution_id = ?::uuid)"
                + "   ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED)";
        return departAll(Departure.ABANDON, where, "lease_expired", Messages.leaseExpired(), null,
                Lease.REDRIVE_GRACE_MS, onlyId, onlyId, limit);
    }

    /**
     * How a running row leaves {@code running} other than by its own end: the requeue, cancel or
     * fail decision, written once. A started attempt that is lost (abandon) is re-driven while
     * attempts remain; a run that never started (hand back) spends no attempt and is re-driven
     * while hand-backs remain; either way a cancel request ends it {@code cancelled}.
     */
    private enum Departure {
        ABANDON("e.attempt < e.max_attempts", false, false),
        HAND_BACK("e.handbacks + 1 < " + MAX_HANDBACKS, true, true),
        /** A started run its draining node killed: like a hand back, but not counted as one. */
        DRAIN("true", true, false);

        final String attemptsLeft;
        /** No attempt spent, and the previous attempt's output shown again. */
        final boolean handBack;
        final boolean countsHandBack;

        Departure(String attemptsLeft, boolean handBack, boolean countsHandBack) {
            this.attemptsLeft = attemptsLeft;
            this.handBack = handBack;
            this.countsHandBack = countsHandBack;
        }

        /** The one decision, evaluated on the locked, current row. */
        String next() {
            return "(CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN " + attemptsLeft
                    + " THEN 'queued' ELSE 'failed' END)";
        }

        /**
         * The update. Binds: error code, cancel message, failure message (a format() template whose
         * arguments are attempt, max attempts, lease owner, lease expiry, hand-backs so far,
         * dispatch, and the caller's text), the caller's text, then the WHERE clause's own.
         */
        String sql(String where) {
            String next = next();
            String queued = "(" + next + " = 'queued')";
            return "UPDATE executions e SET status = " + next + ","
                    + " attempt = e.attempt - " + (handBack ? 1 : 0) + ", handbacks = e.handbacks + " + (countsHandBack ? 1 : 0) + ","
                    + (handBack ? " output_epoch = e.prev_output_epoch, started_at = NULL," : "")
                    + " dispatch_seq = e.dispatch_seq + CASE WHEN " + queued + " THEN 1 ELSE 0 END,"
                    + " enqueued_at = CASE WHEN " + queued + " THEN now() ELSE e.enqueued_at END,"
                    + " finished_at = CASE WHEN " + queued + " THEN NULL ELSE now() END,"
                    + " error_code = CASE " + next + " WHEN 'queued' THEN NULL WHEN 'cancelled' THEN 'cancelled' ELSE ?::text END,"
                    + " error_message = CASE " + next + " WHEN 'queued' THEN NULL WHEN 'cancelled' THEN ?::text"
                    + "   ELSE format(?::text, e.attempt, e.max_attempts, e.lease_owner,"
                    + "     (SELECT l.expires_at FROM leases l WHERE l.execution_id = e.id), e.handbacks + 1, e.dispatch_seq, ?::text) END,"
                    + " lease_owner = NULL, updated_at = now()"
                    + where
                    + " RETURNING e.id, e.owner, left(e.command, 200), e.status, e.attempt, e.dispatch_seq";
        }
    }

    private Optional<Redriven> depart(Departure d, String where, String errorCode, String failTemplate, String why,
                                      Object... whereArgs) {
        return departAll(d, where, errorCode, failTemplate, why, whereArgs).stream().findFirst();
    }

    private List<Redriven> departAll(Departure d, String where, String errorCode, String failTemplate, String why,
                                     Object... whereArgs) {
        String cancelMessage = switch (d) {
            case HAND_BACK -> Messages.CANCELLED_BEFORE_START;
            case DRAIN -> Messages.CANCELLED_WHILE_DRAINING;
            case ABANDON -> Messages.CANCELLED_WORKER_LOST;
        };
        Object[] args = new Object[4 + whereArgs.length];
        args[0] = errorCode;
        args[1] = cancelMessage;
        args[2] = failTemplate;
        args[3] = why == null ? "nothing" : why.length() > 500 ? why.substring(0, 500) + "…" : why;
        System.arraycopy(whereArgs, 0, args, 4, whereArgs.length);
        List<Redriven> moved = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(d.sql(where))) {
            bind(ps, args);
            ps.setQueryTimeout(WRITE_TIMEOUT_S);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    moved.add(new Redriven(rs.getObject(1, UUID.class), rs.getString(2), rs.getString(3),
                            ExecutionStatus.fromWire(rs.getString(4)), rs.getInt(5), rs.getInt(6)));
                }
            }
        } catch (SQLException e) {
            throw new StoreException("cannot move executions out of running (" + d + ")", e);
        }
        return moved;
    }

    /** What a cancel request did. */
    public enum CancelResult { CANCELLED_WHILE_QUEUED, REQUESTED, ALREADY_TERMINAL, NOT_FOUND }

    /**
     * Cancels an owner's execution: a queued one ends at once; a running one is flagged (on its
     * lease row too, where its worker's next renewal reads it) and its worker kills it.
     */
    public CancelResult requestCancel(UUID id, String owner) {
        Optional<CancelResult> r = cancel(" AND owner = ?", Messages.CANCELLED_BEFORE_START, id, owner);
        if (r.isPresent()) {
            return r.get();
        }
        return statusOwned(id, owner).isPresent() ? CancelResult.ALREADY_TERMINAL : CancelResult.NOT_FOUND;
    }

    /**
     * Cancels an execution for an operator, whoever owns it (an admin deleted its JobRunr job on
     * the dashboard): as {@link #requestCancel}, with {@code message} (who cancelled) recorded
     * when it ends while queued. A running one is flagged; its worker kills it and writes its end.
     */
    public CancelResult requestCancelAsOperator(UUID id, String message) {
        Optional<CancelResult> r = cancel("", message, id);
        if (r.isPresent()) {
            return r.get();
        }
        return find(id, OutputStore.Read.NONE).isPresent() ? CancelResult.ALREADY_TERMINAL : CancelResult.NOT_FOUND;
    }

    /** The cancel statement; binds the queued message, the id, then {@code whereMore}'s own. Empty: not queued or running. */
    private Optional<CancelResult> cancel(String whereMore, String queuedMessage, Object... whereArgs) {
        // One statement, so that a row moving between queued and running (claimed, re-driven,
        // handed back) at the same moment is cancelled in whichever state it is in.
        String queued = "status = 'queued'";
        String sql = "WITH c AS (UPDATE executions SET status = CASE WHEN " + queued + " THEN 'cancelled' ELSE status END,"
                + " cancel_requested_at = coalesce(cancel_requested_at, now()),"
                + " finished_at = CASE WHEN " + queued + " THEN now() ELSE finished_at END,"
                + " error_code = CASE WHEN " + queued + " THEN 'cancelled' ELSE error_code END,"
                + " error_message = CASE WHEN " + queued + " THEN ?::text ELSE error_message END,"
                + " updated_at = now()"
                + " WHERE id = ?" + whereMore + " AND status IN ('queued', 'running') RETURNING id, status),"
                + " l AS (UPDATE leases SET cancel_requested = true WHERE execution_id IN (SELECT id FROM c))"
                + " SELECT status FROM c";
        Object[] args = new Object[1 + whereArgs.length];
        args[0] = queuedMessage;
        System.arraycopy(whereArgs, 0, args, 1, whereArgs.length);
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, args);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    return Optional.of(rs.getString(1).equals("cancelled") ? CancelResult.CANCELLED_WHILE_QUEUED : CancelResult.REQUESTED);
                }
            }
        } catch (SQLException e) {
            throw new StoreException("cannot cancel execution " + whereArgs[0], e);
        }
        return Optional.empty();
    }

    /**
     * Queued rows whose JobRunr job is gone or ended (a node crashed between commit and enqueue,
     * or the job was deleted): bumps their dispatch so a fresh job can carry them, and returns them.
     * It looks only at what changed since the last look (the watermark of the fleet's sweep):
     * rows that turned older than {@code grace} since, and jobs that ended since (with a minute of
     * overlap for the clocks of the nodes that wrote them); never at the whole queued backlog.
     */
    public List<Execution> redispatchLost(Duration grace, int limit) {
        String sql = "WITH mark AS (SELECT watermark FROM fleet_tasks WHERE name = 'sweep'),"
                + " candidates AS ("
                + "   SELECT x.id FROM executions x, mark WHERE x.status = 'queued'"
                + "     AND x.enqueued_at > mark.watermark - ? * interval '1 millisecond' - interval '5 seconds'"
                + "     AND x.enqueued_at <= now() - ? * interval '1 millisecond'"
                + "   UNION"
                + "   SELECT x.id FROM jobrunr_jobs j JOIN executions x ON x.job_id = j.id::uuid AND x.status = 'queued', mark"
                + "     WHERE j.state IN ('SUCCEEDED', 'FAILED', 'DELETED')"
                + "     AND j.updatedAt > (mark.watermark - interval '1 minute')::timestamp),"
                // A held row has no job by design (its owner's release gives it one).
                + " lost AS (SELECT x.id FROM executions x WHERE x.id IN (SELECT id FROM candidates) AND x.status = 'queued'"
                + "   AND x.held_since IS NULL"
                + "   AND NOT EXISTS (SELECT 1 FROM jobrunr_jobs j WHERE j.id = x.job_id::text::bpchar"
                + "     AND j.state IN ('AWAITING', 'SCHEDULED', 'ENQUEUED', 'PROCESSING'))"
                + "   ORDER BY x.enqueued_at LIMIT ? FOR UPDATE SKIP LOCKED)"
                + " UPDATE executions SET dispatch_seq = dispatch_seq + 1, enqueued_at = now(), updated_at = now()"
                + " WHERE id IN (SELECT id FROM lost) AND status = 'queued'" + RETURNING_ROW;
        List<Execution> rows = query(sql, grace.toMillis(), grace.toMillis(), limit);
        if (rows.size() < limit) {
            update("UPDATE fleet_tasks SET watermark = now() WHERE name = 'sweep'");
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
        String sql = "WITH lock AS (SELECT pg_advisory_xact_lock(hashtextextended('outrun.owner:' || ?, 0)) AS locked),"
                + " room AS (SELECT outrun_owner_room(?, ?::integer, ?) AS n FROM lock),"
                + " pick AS (SELECT id FROM executions WHERE owner = ? AND status = 'queued' AND held_since IS NOT NULL"
                + "   AND NOT outrun_workspace_busy(id)" // V7: it would only be held again
                + "   ORDER BY created_at, id LIMIT (SELECT n FROM room) FOR UPDATE SKIP LOCKED)"
                + " UPDATE executions SET held_since = NULL, dispatch_seq = dispatch_seq + 1, enqueued_at = now(),"
                + " updated_at = now() WHERE id IN (SELECT id FROM pick) AND status = 'queued'" + RETURNING_ROW;
        List<Execution> released = query(sql, owner, owner, defaultMaxRunning, window, owner);
        // RETURNING has no order: enqueue oldest first, so JobRunr runs them in submission order.
        released.sort(java.util.Comparator.comparing(Execution::createdAt).thenComparing(Execution::id));
        return released;
    }

    /** Whether an owner has held executions now: one probe of the held index. */
    public boolean ownerHasHeld(String owner) {
        String sql = "SELECT EXISTS (SELECT 1 FROM executions WHERE owner = ? AND status = 'queued' AND held_since IS NOT NULL)";
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, owner);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        } catch (SQLException e) {
            throw new StoreException("cannot tell whether " + owner + " has held executions", e);
        }
    }

    /** Owners with held executions, read from the held index one owner at a time (a skip scan). */
    public List<String> ownersWithHeld() {
        String sql = "WITH RECURSIVE o AS ("
                + " SELECT (SELECT min(owner) FROM executions WHERE status = 'queued' AND held_since IS NOT NULL) AS owner"
                + " UNION ALL SELECT (SELECT min(e.owner) FROM executions e WHERE e.status = 'queued'"
                + "   AND e.held_since IS NOT NULL AND e.owner > o.owner) FROM o WHERE o.owner IS NOT NULL)"
                + " SELECT owner FROM o WHERE owner IS NOT NULL";
        List<String> owners = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql);
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                owners.add(rs.getString(1));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot list owners with held executions", e);
        }
        return owners;
    }

    /**
     * True when the run (execution, epoch) found on this machine is a leftover: its execution is
     * ours (the row exists) and no other incarnation holds that very epoch's lease, live or
     * within the re-drive grace. An unknown execution belongs to another fleet sharing the
     * machine and is never touched. (The caller keeps the runs it tracks itself.)
     */
    public boolean isStaleRun(UUID id, long epoch, String incarnation) {
        String sql = "SELECT EXISTS (SELECT 1 FROM executions WHERE id = ?) AND NOT EXISTS (SELECT 1 FROM leases"
                + " WHERE execution_id = ? AND epoch = ? AND owner <> ? AND expires_at > now() - ? * interval '1 millisecond')";
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, id, id, epoch, incarnation, Lease.REDRIVE_GRACE_MS);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        } catch (SQLException e) {
            throw new StoreException("cannot check run " + epoch + " of execution " + id, e);
        }
    }

    /**
     * Retention: drops the stored output of executions that ended more than {@code age} ago (their
     * state, exit code and byte counts stay), and deletes the rows themselves once they ended more
     * than {@code deleteAge} ago (null: never). Works in batches so a large backlog never holds
     * long locks.
     *
     * @return {outputs cleared, rows deleted}
     */
    public long[] prune(Duration age, Duration deleteAge, int batch) {
        long cleared = 0;
        long deleted = 0;
        int n;
        do {
            n = update("WITH batch AS (SELECT e.id FROM executions e WHERE e.finished_at < now() - ? * interval '1 millisecond'"
                    + "   AND EXISTS (SELECT 1 FROM execution_output o WHERE o.execution_id = e.id) LIMIT ?),"
                    + " gone AS (DELETE FROM execution_output o USING batch WHERE o.execution_id = batch.id)"
                    + " UPDATE executions SET stdout_truncated = stdout_total_bytes > 0, stderr_truncated = stderr_total_bytes > 0"
                    + " WHERE id IN (SELECT id FROM batch)", age.toMillis(), batch);
            cleared += n;
        } while (n == batch);
        if (deleteAge != null) {
            do {
                n = update("WITH batch AS (SELECT id FROM executions WHERE finished_at < now() - ? * interval '1 millisecond'"
                        + "   LIMIT ?),"
                        + " gone AS (DELETE FROM execution_output o USING batch WHERE o.execution_id = batch.id)"
                        + " DELETE FROM executions WHERE id IN (SELECT id FROM batch)", deleteAge.toMillis(), batch);
                deleted += n;
            } while (n == batch);
        }
        return new long[] {cleared, deleted};
    }

    /**
     * At a graceful stop, once this incarnation's runs are dead: expires its leases past the grace,
     * so the sweep re-drives them at once.
     */
    public int expireLeases(String incarnation) {
        return update("UPDATE leases SET expires_at = now() - ? * interval '1 millisecond' WHERE owner = ?",
                Lease.REDRIVE_GRACE_MS + 1, incarnation);
    }

    /** Wakes every node listening on {@code channel}. */
    public void notify(String channel, String payload) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT pg_notify(?, ?)")) {
            ps.setString(1, channel);
            ps.setString(2, payload);
            ps.execute();
        } catch (SQLException e) {
            throw new StoreException("cannot notify " + channel, e);
        }
    }

    /**
     * Wakes at most {@code count} live nodes that had a free slot at their last heartbeat, chosen at
     * random, each on its own channel: new work wakes only as many nodes as it needs, never the
     * whole fleet. Nodes that were all busy are not woken: a finishing run onboards the work.
     *
     * @return how many nodes were woken
     */
    public int wakeNodes(int count) {
        String sql = "SELECT count(pg_notify(n.wake_channel, '')) FROM (SELECT wake_channel FROM nodes"
                + " WHERE heartbeat_at > now() - interval '1 minute' AND NOT draining AND running < slots"
                + " ORDER BY random() LIMIT ?) n";
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setInt(1, count);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        } catch (SQLException e) {
            throw new StoreException("cannot wake nodes", e);
        }
    }

    // --- plumbing ---------------------------------------------------------------------------

    private int update(String sql, Object... args) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, args);
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw new StoreException("update failed: " + firstWords(sql), e);
        }
    }

    /** Rows of a statement RETURNING {@link #RETURNING_ROW}: no lease, no output loaded. */
    private List<Execution> query(String sql, Object... args) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, args);
            List<Execution> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(map(rs, null));
                }
            }
            return rows;
        } catch (SQLException e) {
            throw new StoreException("query failed: " + firstWords(sql), e);
        }
    }

    /** One execution as read by {@link #READ}, with the output {@code read} asks for. */
    private Optional<Execution> read(String where, OutputStore.Read read, Object... args) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(READ + where)) {
            bind(ps, args);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                return Optional.of(map(rs, (id, epoch, max, out, err) -> OutputStore.read(c, id, epoch, max, out, err, read)));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot read execution " + args[0], e);
        }
    }

    @FunctionalInterface
    private interface OutputLoader {
        Captured[] load(UUID id, long epoch, int maxOutputBytes, long stdoutTotal, long stderrTotal) throws SQLException;
    }

    private static void bind(PreparedStatement ps, Object... args) throws SQLException {
        for (int i = 0; i < args.length; i++) {
            ps.setObject(i + 1, args[i]);
        }
    }

    private static Execution map(ResultSet rs, OutputLoader output) throws SQLException {
        UUID id = rs.getObject("id", UUID.class);
        ExecutionStatus status = ExecutionStatus.fromWire(rs.getString("status"));
        int max = rs.getInt("max_output_bytes");
        long outputEpoch = rs.getLong("output_epoch");
        // Byte counts: written at the end of an attempt; while it runs, how far its stored output reaches.
        long outTotal = Math.max(rs.getLong("stdout_total_bytes"), rs.getLong("stdout_end"));
        long errTotal = Math.max(rs.getLong("stderr_total_bytes"), rs.getLong("stderr_end"));
        Captured[] streams = output == null
                ? new Captured[] {new Captured(new byte[0], new byte[0], outTotal), new Captured(new byte[0], new byte[0], errTotal)}
                : null;
        Execution e = new Execution(
                id,
                rs.getString("owner"),
                rs.getString("command"),
                rs.getString("image"),
                rs.getString("workdir"),
                parse(rs.getString("env_json")),
                parse(rs.getString("labels_json")),
                rs.getLong("timeout_ms"),
                max,
                status,
                rs.getInt("attempt"),
                rs.getInt("max_attempts"),
                rs.getString("lease_owner"),
                rs.getLong("lease_epoch"),
                outputEpoch,
                instant(rs, "lease_expires_at"),
                rs.getTimestamp("cancel_requested_at") != null,
                rs.getString("idempotency_key"),
                rs.getInt("dispatch_seq"),
                rs.getObject("job_id", UUID.class),
                instant(rs, "held_since"),
                instant(rs, "created_at"),
                instant(rs, "started_at"),
                instant(rs, "finished_at"),
                (Integer) rs.getObject("exit_code"),
                rs.getString("error_code"),
                rs.getString("error_message"),
                streams == null ? null : streams[0],
                streams == null ? null : streams[1]);
        if (output == null) {
            return e;
        }
        Captured[] loaded = output.load(id, outputEpoch, max, outTotal, errTotal);
        return e.withOutput(loaded[0], loaded[1]);
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }

    private static String json(Map<String, String> map) {
        try {
            return JSON.writeValueAsString(map);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("cannot encode a map of strings", e);
        }
    }

    private static Map<String, String> parse(String json) {
        try {
            return json == null ? Map.of() : JSON.readValue(json, STRING_MAP);
        } catch (JsonProcessingException e) {
            throw new StoreException("stored JSON is not a map of strings: " + json, e);
        }
    }

    private static String firstWords(String sql) {
        return sql.length() > 60 ? sql.substring(0, 60) + "..." : sql;
    }

}
