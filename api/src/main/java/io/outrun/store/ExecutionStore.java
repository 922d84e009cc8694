package io.outrun.store;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.execution.Execution;
import io.outrun.execution.ExecutionStatus;
import io.outrun.execution.Submission;
import io.outrun.notify.Channels;
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

    private static final String COLUMNS = "id, owner, command, image, workdir, env::text, labels::text, timeout_ms,"
            + " max_output_bytes, status, attempt, max_attempts, lease_owner, lease_expires_at,"
            + " cancel_requested_at, idempotency_key, dispatch_seq, job_id, created_at, started_at, finished_at,"
            + " exit_code, error_code, error_message, stdout_head, stdout_tail, stdout_total_bytes,"
            + " stderr_head, stderr_tail, stderr_total_bytes";

    private static final String OUTPUT_COLUMNS = "stdout_head = ?, stdout_tail = ?, stdout_total_bytes = ?,"
            + " stdout_truncated = ?, stderr_head = ?, stderr_tail = ?, stderr_total_bytes = ?, stderr_truncated = ?";

    private static final String CANCELLED_BEFORE_START = "Cancelled by its owner before it started.";
    /** Hand-backs (sandbox refused to start the run) after which an execution fails instead. */
    public static final int MAX_HANDBACKS = 20;
    /** Only the running statement of a worker's own attempt may write: the fence. */
    private static final String FENCE = " id = ? AND attempt = ? AND lease_owner = ? AND status = 'running'";

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

    public Inserted insert(Submission s) {
        String sql = "INSERT INTO executions (id, owner, command, image, workdir, env, labels, timeout_ms,"
                + " max_output_bytes, max_attempts, idempotency_key)"
                + " VALUES (?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, ?, ?)"
                + " ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
                + " RETURNING " + COLUMNS;
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
            Optional<Execution> made = one(ps);
            if (made.isPresent()) {
                return new Inserted(made.get(), true);
            }
        } catch (SQLException e) {
            throw new StoreException("cannot store a new execution for owner " + s.owner(), e);
        }
        return new Inserted(findByKey(s.owner(), s.idempotencyKey()).orElseThrow(
                () -> new StoreException("idempotency key conflict without a row for owner " + s.owner(), null)), false);
    }

    private Optional<Execution> findByKey(String owner, String key) {
        return query("SELECT " + COLUMNS + " FROM executions WHERE owner = ? AND idempotency_key = ?", owner, key)
                .stream().findFirst();
    }

    public Optional<Execution> find(UUID id) {
        return query("SELECT " + COLUMNS + " FROM executions WHERE id = ?", id).stream().findFirst();
    }

    /** An owner's execution; someone else's answers exactly like a missing one. */
    public Optional<Execution> findOwned(UUID id, String owner) {
        return query("SELECT " + COLUMNS + " FROM executions WHERE id = ? AND owner = ?", id, owner)
                .stream().findFirst();
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
     * Claims a queued execution for {@code node}: one guarded statement, so at most one worker
     * ever wins an attempt. Empty: someone else has it, it was cancelled, or it is gone.
     */
    public Optional<Execution> claim(UUID id, String node, Duration ttl) {
        String sql = "UPDATE executions SET status = 'running', attempt = attempt + 1, lease_owner = ?,"
                + " lease_expires_at = now() + ? * interval '1 millisecond', heartbeat_at = now(),"
                + " started_at = now(), updated_at = now(), exit_code = NULL, error_code = NULL, error_message = NULL,"
                + " stdout_head = '', stdout_tail = '', stdout_total_bytes = 0, stdout_truncated = false,"
                + " stderr_head = '', stderr_tail = '', stderr_total_bytes = 0, stderr_truncated = false"
                + " WHERE id = ? AND status = 'queued' AND cancel_requested_at IS NULL AND attempt < max_attempts"
                + " RETURNING " + COLUMNS;
        // The claim and its NOTIFY (live readers see "running") in one round trip.
        return query("WITH claimed AS (" + sql + ") SELECT claimed.*, pg_notify('" + Channels.CHANGED
                + "', claimed.id::text) FROM claimed", node, ttl.toMillis(), id).stream().findFirst();
    }

    /** What one heartbeat learnt: the leases still held, and which of them were asked to cancel. */
    public record Renewal(Set<Lease> held, Set<Lease> cancelRequested) {
    }

    /** Renews, in one statement, every lease a node holds; a lease missing from the answer is lost. */
    public Renewal renew(String node, Duration ttl, Collection<Lease> leases) {
        Set<Lease> held = new HashSet<>();
        Set<Lease> cancel = new HashSet<>();
        if (leases.isEmpty()) {
            return new Renewal(held, cancel);
        }
        String sql = "UPDATE executions e SET lease_expires_at = now() + ? * interval '1 millisecond',"
                + " heartbeat_at = now(), updated_at = now()"
                + " FROM unnest(?::uuid[], ?::int[]) AS l(id, attempt)"
                + " WHERE e.id = l.id AND e.attempt = l.attempt AND e.lease_owner = ? AND e.status = 'running'"
                + " RETURNING e.id, e.attempt, e.cancel_requested_at IS NOT NULL";
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, ttl.toMillis());
            ps.setArray(2, c.createArrayOf("uuid", leases.stream().map(Lease::executionId).toArray()));
            ps.setArray(3, c.createArrayOf("int4", leases.stream().map(Lease::attempt).toArray()));
            ps.setString(4, node);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Lease lease = new Lease(rs.getObject(1, UUID.class), rs.getInt(2), node);
                    held.add(lease);
                    if (rs.getBoolean(3)) {
                        cancel.add(lease);
                    }
                }
            }
        } catch (SQLException e) {
            throw new StoreException("cannot renew " + leases.size() + " leases of node " + node, e);
        }
        return new Renewal(held, cancel);
    }

    /** Writes new output of running attempts in one batch; a fenced-out row is skipped. */
    public void flushOutput(Collection<OutputUpdate> updates) {
        if (updates.isEmpty()) {
            return;
        }
        String sql = "UPDATE executions SET " + OUTPUT_COLUMNS + ", updated_at = now() WHERE" + FENCE;
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (OutputUpdate u : updates) {
                int i = setOutput(ps, 1, u.stdout(), u.stderr());
                setLease(ps, i, u.lease());
                ps.addBatch();
            }
            ps.executeBatch();
        } catch (SQLException e) {
            throw new StoreException("cannot flush output of " + updates.size() + " executions", e);
        }
    }

    /**
     * Writes an attempt's end under its lease. False: the lease was lost (the sweep re-drove or
     * reaped the row); the caller must write nothing more.
     */
    public boolean finish(Lease lease, Outcome outcome) {
        // The end and its NOTIFY (long polls answer at once) in one round trip.
        String sql = "WITH ended AS (UPDATE executions SET status = ?, exit_code = ?, error_code = ?, error_message = ?, "
                + OUTPUT_COLUMNS + ", finished_at = now(), updated_at = now(), lease_owner = NULL,"
                + " lease_expires_at = NULL WHERE" + FENCE + " RETURNING id)"
                + " SELECT pg_notify('" + Channels.CHANGED + "', id::text) FROM ended";
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, outcome.status().wire());
            ps.setObject(2, outcome.exitCode());
            ps.setString(3, outcome.errorCode());
            ps.setString(4, outcome.errorMessage());
            int i = setOutput(ps, 5, outcome.stdout(), outcome.stderr());
            setLease(ps, i, lease);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        } catch (SQLException e) {
            throw new StoreException("cannot finish execution " + lease.executionId(), e);
        }
    }

    /**
     * Undoes a claim whose command never started (the sandbox refused it, e.g. the Docker engine
     * was restarting): back to {@code queued} under a new dispatch, without spending an attempt;
     * {@code cancelled} when its owner asked to cancel meanwhile (a queued row with a cancel
     * request could never be claimed again); {@code failed} with {@code sandbox_error} after
     * {@link #MAX_HANDBACKS} hand-backs, so that an execution no sandbox can start ends with a reason.
     *
     * @param why what the sandbox said, kept in the error message if the execution fails
     * @return the new state, or empty when the lease was already lost
     */
    public Optional<Redriven> unclaim(Lease lease, String why) {
        String cancelled = "cancel_requested_at IS NOT NULL";
        String requeue = "(cancel_requested_at IS NULL AND handbacks + 1 < " + MAX_HANDBACKS + ")";
        String sql = "UPDATE executions SET status = CASE WHEN " + requeue + " THEN 'queued' WHEN " + cancelled
                + "   THEN 'cancelled' ELSE 'failed' END,"
                + " attempt = attempt - 1, handbacks = handbacks + 1,"
                + " dispatch_seq = dispatch_seq + CASE WHEN " + requeue + " THEN 1 ELSE 0 END,"
                + " enqueued_at = CASE WHEN " + requeue + " THEN now() ELSE enqueued_at END,"
                + " finished_at = CASE WHEN " + requeue + " THEN NULL ELSE now() END,"
                + " error_code = CASE WHEN " + requeue + " THEN NULL WHEN " + cancelled + " THEN 'cancelled'"
                + "   ELSE 'sandbox_error' END,"
                + " error_message = CASE WHEN " + requeue + " THEN NULL WHEN " + cancelled + " THEN '" + CANCELLED_BEFORE_START
                + "'   ELSE format('No worker''s sandbox could start this execution (%s tries since it was submitted);"
                + " the last said: %s. The command never ran. Resubmit once the workers'' sandboxes are healthy.',"
                + "   handbacks + 1, ?::text) END,"
                + " started_at = NULL, lease_owner = NULL, lease_expires_at = NULL, updated_at = now()"
                + " WHERE" + FENCE + RETURNING_REDRIVEN;
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, why == null ? "nothing" : why.length() > 500 ? why.substring(0, 500) + "…" : why);
            setLease(ps, 2, lease);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(redriven(rs)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new StoreException("cannot unclaim execution " + lease.executionId(), e);
        }
    }

    /**
     * Gives a running attempt back because this node cannot run it (its sandbox failed, e.g. the
     * Docker engine restarted): back to {@code queued} for another attempt while any remain, else
     * {@code failed} with {@code errorCode}. Fenced like every worker write.
     *
     * @return the new state, or empty when the lease was already lost
     */
    public Optional<Redriven> release(Lease lease, String errorCode, String errorMessage) {
        String sql = "UPDATE executions SET" + requeueOrFail("?", "?") + " WHERE" + FENCE + RETURNING_REDRIVEN;
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, errorCode);
            ps.setString(2, errorMessage);
            setLease(ps, 3, lease);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(redriven(rs)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new StoreException("cannot release execution " + lease.executionId(), e);
        }
    }

    /** What a cancel request did. */
    public enum CancelResult { CANCELLED_WHILE_QUEUED, REQUESTED, ALREADY_TERMINAL, NOT_FOUND }

    /**
     * Cancels an owner's execution: a queued one ends at once; a running one is flagged and its
     * worker kills it (woken by NOTIFY, or at its next heartbeat).
     */
    public CancelResult requestCancel(UUID id, String owner) {
        // One statement, so that a row moving between queued and running (claimed, re-driven,
        // handed back) at the same moment is cancelled in whichever state it is in.
        String queued = "status = 'queued'";
        String sql = "UPDATE executions SET status = CASE WHEN " + queued + " THEN 'cancelled' ELSE status END,"
                + " cancel_requested_at = coalesce(cancel_requested_at, now()),"
                + " finished_at = CASE WHEN " + queued + " THEN now() ELSE finished_at END,"
                + " error_code = CASE WHEN " + queued + " THEN 'cancelled' ELSE error_code END,"
                + " error_message = CASE WHEN " + queued + " THEN '" + CANCELLED_BEFORE_START + "' ELSE error_message END,"
                + " updated_at = now()"
                + " WHERE id = ? AND owner = ? AND status IN ('queued', 'running') RETURNING status";
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setObject(1, id);
            ps.setString(2, owner);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    return rs.getString(1).equals("cancelled") ? CancelResult.CANCELLED_WHILE_QUEUED : CancelResult.REQUESTED;
                }
            }
        } catch (SQLException e) {
            throw new StoreException("cannot cancel execution " + id, e);
        }
        return findOwned(id, owner).isPresent() ? CancelResult.ALREADY_TERMINAL : CancelResult.NOT_FOUND;
    }

    /**
     * Moves running rows whose lease expired: back to {@code queued} while attempts remain, else
     * to {@code failed} with {@code lease_expired}. Decided and written in one statement; rows
     * another sweep is handling are skipped.
     */
    public List<Redriven> redriveExpired(int limit) {
        return redriveExpired(null, limit);
    }

    /** As {@link #redriveExpired(int)}, for one execution only (the opportunistic check on a poll). */
    public List<Redriven> redriveExpired(UUID onlyId, int limit) {
        String sql = "WITH expired AS (SELECT id AS expired_id FROM executions WHERE status = 'running'"
                + "   AND lease_expires_at < now() AND (?::uuid IS NULL OR id = ?::uuid)"
                + "   ORDER BY lease_expires_at LIMIT ? FOR UPDATE SKIP LOCKED)"
                + " UPDATE executions SET" + requeueOrFail("'lease_expired'", "format("
                + "   'Attempt %s of %s was lost: its worker (node %s) stopped renewing its lease, which expired at %s,"
                + " and no attempts remain. A worker stops renewing when it crashes, is killed (often for memory),"
                + " or loses the database. The output below is what was saved before the loss. Resubmit to try again;"
                + " if every attempt dies the same way, the command itself may be killing its worker.',"
                + "   attempt, max_attempts, lease_owner, lease_expires_at)")
                + " FROM expired WHERE id = expired.expired_id" + RETURNING_REDRIVEN;
        List<Redriven> moved = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setObject(1, onlyId);
            ps.setObject(2, onlyId);
            ps.setInt(3, limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    moved.add(redriven(rs));
                }
            }
        } catch (SQLException e) {
            throw new StoreException("cannot re-drive expired leases", e);
        }
        return moved;
    }

    /**
     * The re-drive decision, written once: with attempts left, back to {@code queued} under a new
     * dispatch (a fresh JobRunr job id); with none, {@code failed} with the given error; and when
     * its owner had asked to cancel, {@code cancelled} (a re-queued row could never be claimed).
     * Either way the lease is dropped. The error arguments are SQL expressions.
     */
    private static String requeueOrFail(String errorCode, String errorMessage) {
        String requeue = "(cancel_requested_at IS NULL AND attempt < max_attempts)";
        String cancelled = "cancel_requested_at IS NOT NULL";
        return " status = CASE WHEN " + requeue + " THEN 'queued' WHEN " + cancelled + " THEN 'cancelled' ELSE 'failed' END,"
                + " dispatch_seq = dispatch_seq + CASE WHEN " + requeue + " THEN 1 ELSE 0 END,"
                + " enqueued_at = CASE WHEN " + requeue + " THEN now() ELSE enqueued_at END,"
                + " finished_at = CASE WHEN " + requeue + " THEN NULL ELSE now() END,"
                + " error_code = CASE WHEN " + requeue + " THEN NULL WHEN " + cancelled + " THEN 'cancelled'"
                + "   ELSE " + errorCode + " END,"
                + " error_message = CASE WHEN " + requeue + " THEN NULL WHEN " + cancelled + " THEN 'Cancelled by its owner;"
                + " its worker was lost before it could confirm the command stopped.' ELSE " + errorMessage + " END,"
                + " lease_owner = NULL, lease_expires_at = NULL, updated_at = now()";
    }

    private static final String RETURNING_REDRIVEN = " RETURNING id, owner, left(command, 200), status, attempt, dispatch_seq";

    private static Redriven redriven(ResultSet rs) throws SQLException {
        return new Redriven(rs.getObject(1, UUID.class), rs.getString(2), rs.getString(3),
                ExecutionStatus.fromWire(rs.getString(4)), rs.getInt(5), rs.getInt(6));
    }

    /**
     * Queued rows older than {@code grace} whose JobRunr job no longer exists or has ended (the
     * node crashed between commit and enqueue, or the job was deleted): bumps their dispatch so
     * a fresh job can carry them, and returns them.
     */
    public List<Execution> redispatchLost(Duration grace, int limit) {
        String sql = "UPDATE executions SET dispatch_seq = dispatch_seq + 1, enqueued_at = now(), updated_at = now()"
                + " WHERE id IN (SELECT x.id FROM executions x WHERE x.status = 'queued'"
                + "   AND x.enqueued_at < now() - ? * interval '1 millisecond'"
                + "   AND NOT EXISTS (SELECT 1 FROM jobrunr_jobs j WHERE j.id = x.job_id::text::bpchar"
                + "     AND j.state IN ('AWAITING', 'SCHEDULED', 'ENQUEUED', 'PROCESSING'))"
                + "   ORDER BY x.enqueued_at LIMIT ? FOR UPDATE SKIP LOCKED)"
                + " AND status = 'queued' RETURNING " + COLUMNS;
        return query(sql, grace.toMillis(), limit);
    }

    /**
     * True when a run of (execution, attempt) found on this machine is a leftover: the execution
     * is ours (its row exists) and that attempt is not live on another node (it ended, was
     * re-driven, or was this node's own before a restart). An unknown execution belongs to
     * another fleet sharing the machine and is never touched.
     */
    public boolean isStaleAttempt(UUID id, int attempt, String node) {
        // Only whether such a row exists: the clean-up asks once per container, every pass.
        String sql = "SELECT EXISTS (SELECT 1 FROM executions WHERE id = ? AND NOT (status = 'running'"
                + " AND attempt = ? AND lease_expires_at > now() AND lease_owner <> ?))";
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, id, attempt, node);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        } catch (SQLException e) {
            throw new StoreException("cannot check attempt " + attempt + " of execution " + id, e);
        }
    }

    /**
     * Retention: drops the stored output of executions that ended more than {@code age} ago (their
     * state, exit code, byte counts and truncation flags stay), and deletes the rows themselves
     * once they ended more than {@code deleteAge} ago (null: never). Works in batches so a large
     * backlog never holds long locks.
     *
     * @return {outputs cleared, rows deleted}
     */
    public long[] prune(Duration age, Duration deleteAge, int batch) {
        long cleared = 0;
        long deleted = 0;
        int n;
        do {
            n = update("UPDATE executions SET stdout_head = '', stdout_tail = '', stderr_head = '', stderr_tail = '',"
                    + " stdout_truncated = stdout_total_bytes > 0, stderr_truncated = stderr_total_bytes > 0"
                    + " WHERE id IN (SELECT id FROM executions WHERE finished_at < now() - ? * interval '1 millisecond'"
                    + "   AND (octet_length(stdout_head) + octet_length(stdout_tail) + octet_length(stderr_head)"
                    + "        + octet_length(stderr_tail)) > 0 LIMIT ?)", age.toMillis(), batch);
            cleared += n;
        } while (n == batch);
        if (deleteAge != null) {
            do {
                n = update("DELETE FROM executions WHERE id IN (SELECT id FROM executions"
                        + " WHERE finished_at < now() - ? * interval '1 millisecond' LIMIT ?)", deleteAge.toMillis(), batch);
                deleted += n;
            } while (n == batch);
        }
        return new long[] {cleared, deleted};
    }

    /** At a graceful stop: lets the node's leases expire now so the sweep re-drives at once. */
    public int expireLeases(String node) {
        return update("UPDATE executions SET lease_expires_at = now(), updated_at = now()"
                + " WHERE lease_owner = ? AND status = 'running'", node);
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

    // --- plumbing ---------------------------------------------------------------------------

    private int update(String sql, Object... args) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, args);
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw new StoreException("update failed: " + firstWords(sql), e);
        }
    }

    private List<Execution> query(String sql, Object... args) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, args);
            List<Execution> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(map(rs));
                }
            }
            return rows;
        } catch (SQLException e) {
            throw new StoreException("query failed: " + firstWords(sql), e);
        }
    }

    private Optional<Execution> one(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            return rs.next() ? Optional.of(map(rs)) : Optional.empty();
        }
    }

    private static void bind(PreparedStatement ps, Object... args) throws SQLException {
        for (int i = 0; i < args.length; i++) {
            ps.setObject(i + 1, args[i]);
        }
    }

    private static int setOutput(PreparedStatement ps, int i, Captured out, Captured err) throws SQLException {
        for (Captured c : new Captured[] {out, err}) {
            Captured v = c == null ? Captured.EMPTY : c;
            ps.setBytes(i++, v.head());
            ps.setBytes(i++, v.tail());
            ps.setLong(i++, v.totalBytes());
            ps.setBoolean(i++, v.truncated());
        }
        return i;
    }

    private static void setLease(PreparedStatement ps, int i, Lease lease) throws SQLException {
        ps.setObject(i, lease.executionId());
        ps.setInt(i + 1, lease.attempt());
        ps.setString(i + 2, lease.node());
    }

    private static Execution map(ResultSet rs) throws SQLException {
        return new Execution(
                rs.getObject("id", UUID.class),
                rs.getString("owner"),
                rs.getString("command"),
                rs.getString("image"),
                rs.getString("workdir"),
                parse(rs.getString(6)),
                parse(rs.getString(7)),
                rs.getLong("timeout_ms"),
                rs.getInt("max_output_bytes"),
                ExecutionStatus.fromWire(rs.getString("status")),
                rs.getInt("attempt"),
                rs.getInt("max_attempts"),
                rs.getString("lease_owner"),
                instant(rs, "lease_expires_at"),
                rs.getTimestamp("cancel_requested_at") != null,
                rs.getString("idempotency_key"),
                rs.getInt("dispatch_seq"),
                rs.getObject("job_id", UUID.class),
                instant(rs, "created_at"),
                instant(rs, "started_at"),
                instant(rs, "finished_at"),
                (Integer) rs.getObject("exit_code"),
                rs.getString("error_code"),
                rs.getString("error_message"),
                new Captured(rs.getBytes("stdout_head"), rs.getBytes("stdout_tail"), rs.getLong("stdout_total_bytes")),
                new Captured(rs.getBytes("stderr_head"), rs.getBytes("stderr_tail"), rs.getLong("stderr_total_bytes")));
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
