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
     * A worker's own run, still running under a lease that has not expired: the fence of its end,
     * hand back, drain back and release. Past expiry the run's kill switch may have fired: its end
     * and its last output land together, or not at all (the sweep then decides).
     */
    private static final String FENCE = """
            WHERE e.id = :id AND e.lease_epoch = :epoch AND e.status = 'running'
              AND EXISTS (SELECT 1 FROM leases l WHERE l.execution_id = e.id AND l.epoch = e.lease_epoch
                AND l.expires_at > now())""";

    private static final NamedSql CLAIM = NamedSql.of("""
            WITH target AS (SELECT id, owner FROM executions WHERE id = :id AND status = 'queued'
                AND held_since IS NULL AND cancel_requested_at IS NULL AND attempt < max_attempts FOR UPDATE),
              -- V7: a run of a workspace another run has is held too, until that one saved it.
              gate AS (SELECT id, owner, outrun_owner_may_run(owner, :default_max_running::integer) AND outrun_workspace_free(id) AS ok
                FROM target),
              claimed AS (UPDATE executions SET status = 'running', attempt = attempt + 1,
                lease_epoch = lease_epoch + 1, lease_owner = :owner, prev_output_epoch = output_epoch,
                output_epoch = lease_epoch + 1, started_at = now(), updated_at = now(), exit_code = NULL,
                error_code = NULL, error_message = NULL, stdout_total_bytes = 0, stderr_total_bytes = 0,
                stdout_truncated = false, stderr_truncated = false
                WHERE id IN (SELECT id FROM gate WHERE ok)
                RETURNING %s),
              held AS (UPDATE executions SET held_since = now(), updated_at = now()
                WHERE id IN (SELECT id FROM gate WHERE NOT ok) RETURNING id),
              lease AS (INSERT INTO leases (execution_id, epoch, owner, expires_at)
                SELECT id, lease_epoch, lease_owner, now() + :ttl_ms * interval '1 millisecond' FROM claimed
                ON CONFLICT (execution_id) DO UPDATE SET epoch = EXCLUDED.epoch, owner = EXCLUDED.owner,
                expires_at = EXCLUDED.expires_at, renewed_at = now(), cancel_requested = false RETURNING expires_at)
            -- The claim and its NOTIFY (live readers see "running") in one round trip; one row
            -- always, so a refusal says whether it held the execution.
            SELECT claimed.*, (SELECT expires_at FROM lease) AS lease_expires_at, NULL::int8 AS stdout_end,
              NULL::int8 AS stderr_end, pg_notify('%s', claimed.id::text) AS notified,
              EXISTS (SELECT 1 FROM held) AS was_held,
              -- Only a run with inputs (V7) costs the node a read of them.
              EXISTS (SELECT 1 FROM execution_inputs i WHERE i.execution_id = claimed.id) AS has_inputs,
              EXISTS (SELECT 1 FROM executions h, gate WHERE h.owner = gate.owner AND h.status = 'queued'
                AND h.held_since IS NOT NULL AND h.id <> gate.id) AS owner_has_held
            FROM (SELECT 1) one LEFT JOIN claimed ON true""".formatted(ExecutionRows.ROW, Channels.CHANGED));

    private static final NamedSql FINISH = NamedSql.of("""
            WITH ended AS (UPDATE executions e SET status = :status, exit_code = :exit_code, error_code = :error_code,
                error_message = :error_message, stdout_total_bytes = :stdout_total, stderr_total_bytes = :stderr_total,
                stdout_truncated = :stdout_total > max_output_bytes / 2 + (max_output_bytes - max_output_bytes / 2),
                stderr_truncated = :stderr_total > max_output_bytes / 2 + (max_output_bytes - max_output_bytes / 2),
                finished_at = now(), updated_at = now(), lease_owner = NULL
                %s
                RETURNING id, output_epoch),
              -- Earlier attempts' output is no longer shown by anyone: drop it with the end.
              old AS (DELETE FROM execution_output o USING ended WHERE o.execution_id = ended.id
                AND o.epoch <> ended.output_epoch)
            -- The end and its NOTIFY (long polls answer at once) in one round trip.
            SELECT pg_notify('%s', id::text) FROM ended""".formatted(FENCE, Channels.CHANGED));

    private static final NamedSql EXPIRE_LEASES = NamedSql.of("""
            UPDATE leases SET expires_at = now() - :ms * interval '1 millisecond' WHERE owner = :incarnation""");

    private static final NamedSql IS_STALE_RUN = NamedSql.of("""
            SELECT EXISTS (SELECT 1 FROM executions WHERE id = :id) AND NOT EXISTS (SELECT 1 FROM leases
              WHERE execution_id = :id AND epoch = :epoch AND owner <> :incarnation
                AND expires_at > now() - :grace_ms * interval '1 millisecond')""");

    private final DataSource dataSource;

    public LeaseStore(DataSource dataSource) {
        this.dataSource = dataSource;
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
    public record Claim(Optional<Execution> execution, boolean held, boolean ownerHasHeld, boolean hasInputs) {
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
        NamedSql.Args args = NamedSql.Args.of("id", id, "default_max_running", defaultMaxRunning, "owner", owner)
                .and("ttl_ms", ttl.toMillis());
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = CLAIM.prepare(c, args)) {
            ps.setQueryTimeout(ExecutionRows.WRITE_TIMEOUT_S);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                Optional<Execution> won = rs.getObject("id") == null ? Optional.empty() : Optional.of(ExecutionRows.map(rs, null));
                return new Claim(won, rs.getBoolean("was_held"), rs.getBoolean("owner_has_held"), rs.getBoolean("has_inputs"));
            }
        } catch (SQLException e) {
            throw new StoreException("cannot claim execution " + id, e);
        }
    }

    /**
     * Writes an attempt's end under its lease, with its last output, in one transaction. False:
     * the lease was lost (the sweep re-drove or reaped the row); the caller must write nothing more.
     */
    public boolean finish(Lease lease, Outcome outcome) {
        NamedSql.Args args = NamedSql.Args.of("status", outcome.status().wire(), "exit_code", outcome.exitCode(),
                        "error_code", outcome.errorCode())
                .and("error_message", outcome.errorMessage())
                .and("stdout_total", outcome.stdoutTotal())
                .and("stderr_total", outcome.stderrTotal())
                .and("id", lease.executionId())
                .and("epoch", lease.epoch());
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
                try (PreparedStatement ps = FINISH.prepare(c, args)) {
                    ps.setQueryTimeout(ExecutionRows.WRITE_TIMEOUT_S);
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
        return Departure.HAND_BACK.applyOne(dataSource, FENCE, "sandbox_error", Messages.handBackFailed(), why, fence(lease));
    }

    /**
     * Hands a started run back because its node drains (a rolling deploy): its run was killed,
     * no attempt is spent (the command did nothing wrong), and it is re-driven at once; a cancel
     * request ends it {@code cancelled}.
     *
     * @return the new state, or empty when the lease was already lost
     */
    public Optional<Redriven> drainBack(Lease lease) {
        return Departure.DRAIN.applyOne(dataSource, FENCE, "sandbox_error", "%7$s", "drained", fence(lease));
    }

    /**
     * Gives a started attempt up because this node cannot run it (its sandbox lost it, e.g. the
     * Docker engine restarted): re-driven for another attempt while any remain, else
     * {@code failed} with {@code errorCode}.
     *
     * @return the new state, or empty when the lease was already lost
     */
    public Optional<Redriven> release(Lease lease, String errorCode, String errorMessage) {
        return Departure.ABANDON.applyOne(dataSource, FENCE, errorCode, "%7$s", errorMessage, fence(lease));
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

    private static NamedSql.Args fence(Lease lease) {
        return NamedSql.Args.of("id", lease.executionId(), "epoch", lease.epoch());
    }
}
