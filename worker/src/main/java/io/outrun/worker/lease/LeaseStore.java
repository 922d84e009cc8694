package io.outrun.worker.lease;

import io.outrun.core.execution.Execution;
import io.outrun.core.store.Departed;
import io.outrun.core.store.Departure;
import io.outrun.core.store.ExecutionRows;
import io.outrun.core.store.ExecutionsTable;
import io.outrun.core.store.Lease;
import io.outrun.core.store.Messages;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.Outcome;
import io.outrun.core.store.OutputStore;
import io.outrun.core.store.SqlText;
import io.outrun.core.store.StoreException;
import io.outrun.core.store.Transaction;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The {@code leases} table's home, and a worker's side of an execution: the claim that makes
 * its lease, and every write fenced by that lease (the end, giving the run back). Those
 * statements change {@code executions} first, so they live in {@link ExecutionsTable} (the
 * claim, the finish, and the departures by the lease, side by side there: read them together,
 * their fence keeps two attempts from both writing). Zero rows is a normal answer here: the lease was lost, and the caller writes nothing
 * more. Every time is the database's {@code now()}.
 */
public final class LeaseStore {

    /** Hand-backs (sandbox refused to start the run) after which an execution fails instead. */
    public static final int MAX_HANDBACKS = 20;

    private static final NamedSql EXPIRE_LEASES = NamedSql.of("""
            UPDATE leases SET expires_at = now() - :ms * interval '1 millisecond' WHERE owner = :incarnation""");

    private final DataSource dataSource;
    private final EndBatch ends;

    public LeaseStore(DataSource dataSource) {
        this.dataSource = dataSource;
        this.ends = new EndBatch(dataSource);
    }

    /** The claim as the nodes send it (bench/fleet times it on a big table). */
    public static SqlText claimStatement() {
        return ExecutionsTable.CLAIM.sqlText();
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
     * Claims up to {@code slots} queued executions for the node incarnation {@code holder}, fairly
     * between owners, under running caps ({@code owners.max_running}, else
     * {@code defaultMaxRunning}; null: none) and workspace exclusivity: see {@link ExecutionsTable#CLAIM}. One
     * statement, so at most one node ever wins a row and no owner ever runs more than its cap.
     */
    public Batch claim(String holder, int slots, Duration ttl, Integer defaultMaxRunning) {
        return claim(null, holder, slots, ttl, defaultMaxRunning);
    }

    /** Claims this very execution if it is claimable now (tests and tools); empty otherwise. */
    public Optional<Execution> claim(UUID id, String holder, Duration ttl) {
        return claim(id, holder, ttl, null);
    }

    /** As {@link #claim(UUID, String, Duration)}, under the operator's default running cap. */
    public Optional<Execution> claim(UUID id, String holder, Duration ttl, Integer defaultMaxRunning) {
        return claim(id, holder, 1, ttl, defaultMaxRunning).claimed().stream().findFirst().map(Claimed::execution);
    }

    private Batch claim(UUID onlyId, String holder, int slots, Duration ttl, Integer defaultMaxRunning) {
        NamedSql.Args args = NamedSql.Args.of("only_id", onlyId, "default_max_running", defaultMaxRunning, "holder", holder)
                .and("slots", slots)
                .and("ttl_ms", ttl.toMillis());
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = ExecutionsTable.CLAIM.prepare(c, args)) {
            ps.setQueryTimeout(ExecutionRows.WRITE_TIMEOUT_S);
            List<Claimed> won = new ArrayList<>();
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
            throw new StoreException("cannot claim executions for " + holder, e);
        }
    }

    /**
     * What writing an end did: {@code written} false when the lease was lost (the sweep re-drove
     * or reaped the row: the caller must write nothing more); {@code ownerQueued} when the
     * execution's owner has queued work, which the slot this run frees may take.
     */
    public record Finish(boolean written, boolean ownerQueued) {
    }

    /** Writes an attempt's end under its lease, with its last output, in one statement. */
    public Finish finish(Lease lease, Outcome outcome) {
        return finish(lease, outcome, null);
    }

    /**
     * As {@link #finish(Lease, Outcome)}, under the operator's default running cap (null: none),
     * which tells whether the end may release held-back work of the owner. Written with the other
     * ends of this node being written at the same moment, in one statement ({@link EndBatch}),
     * each fenced on its own lease as a lone end is.
     */
    public Finish finish(Lease lease, Outcome outcome, Integer defaultMaxRunning) {
        return ends.finish(lease, outcome, defaultMaxRunning);
    }

    /** Statements the ends of this store have sent so far (one per write of a batch, each resend counted). */
    public long endStatements() {
        return ends.statements();
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
    public Optional<Departed> handBack(Lease lease, String why, Duration pause) {
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
    public Optional<Departed> drainBack(Lease lease) {
        return Departure.DRAIN.applyOne(dataSource, Departure.Rows.BY_LEASE, "sandbox_error", "%7$s", "drained", fence(lease, Duration.ZERO));
    }

    /**
     * Abandons a started attempt because this node cannot run it (its sandbox lost it, e.g. the
     * Docker engine restarted): re-driven for another attempt, claimable after {@code pause},
     * while any remain, else {@code failed} with {@code errorCode}.
     *
     * @return the new state, or empty when the lease was already lost
     */
    public Optional<Departed> abandon(Lease lease, String errorCode, String errorMessage, Duration pause) {
        return Departure.ABANDON.applyOne(dataSource, Departure.Rows.BY_LEASE, errorCode, "%7$s", errorMessage, fence(lease, pause));
    }

    /**
     * What a retry's write did: {@code moved} the new state (empty: the lease was already lost),
     * or {@code cancelRequested}: its owner asked for a cancel, nothing was written, and the
     * attempt's end is to be written as it ended.
     */
    public record Retried(Optional<Departed> moved, boolean cancelRequested) {
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
                try (PreparedStatement ps = ExecutionsTable.CANCEL_BEFORE_RETRY.prepare(tx,
                        NamedSql.Args.of("id", lease.executionId(), "epoch", lease.epoch()))) {
                    try (ResultSet rs = ps.executeQuery()) {
                        if (rs.next() && rs.getBoolean(1)) {
                            return Transaction.Result.rollback(new Retried(Optional.empty(), true));
                        }
                    }
                }
                if (withOutput) {
                    OutputStore.append(tx, lease.holder(), List.of(outcome.output()));
                }
                Optional<Departed> moved = Departure.RETRY.apply(tx, Departure.Rows.BY_LEASE, outcome.errorCode(), "%7$s", why,
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
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = ExecutionsTable.IS_STALE_RUN.prepare(c, args);
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
