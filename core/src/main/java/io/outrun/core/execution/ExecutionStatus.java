package io.outrun.core.execution;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/**
 * The lifecycle of an execution and its legal moves. The database enforces the same table (the
 * trigger {@code executions_check_transition} of migration V1), so no statement of any node can
 * make an illegal move; {@code ExecutionStoreIT} checks that the two tables agree. Which move a
 * running row makes when it leaves running without ending by itself (re-drive, reap, cancel) is
 * decided in one place, {@code core.store.Departure}.
 *
 * <pre>
 *             claim                     exit 0
 *   queued ──────────▶ running ──────────────────▶ succeeded
 *     │  ▲               │  │ exit ≠ 0, sandbox error, lease reaped ──▶ failed
 *     │  └── re-drive ───┘  │ deadline ──▶ timed_out
 *     │   (lease expired,   │ cancel   ──▶ cancelled
 *     │    attempts left)
 *     └── cancel ──▶ cancelled
 * </pre>
 *
 * This enum is the source of the table: the trigger and the README's "States and moves" are
 * checked against {@link #next()} ({@code ExecutionStoreIT}, {@code StatesDocTest}). Each
 * constant says which component moves a row in and out.
 */
public enum ExecutionStatus {
    /**
     * Waits for a slot, its start time, a retry's backoff or a hand-back's pause. In: a submit
     * ({@code core.service.ExecutionService}) or a schedule's firing ({@code worker.schedule.ScheduleClock}); the
     * sweep's re-drive ({@code core.redrive.RedriveSweep}); its worker's hand back, drain or retry
     * ({@code worker.attempt.EndWriter} through {@code worker.lease.LeaseStore}). Out: a worker's claim
     * ({@code worker.dispatch.ClaimLoop}, {@code worker.lease.LeaseStore}), or a cancel ({@code core.store.SubmissionStore}).
     */
    QUEUED,
    /**
     * An attempt holds its lease on a worker. In: a worker's claim. Out: that worker's fenced end
     * ({@code worker.attempt.EndWriter}), or the sweep once the lease expired ({@code core.redrive.RedriveSweep}).
     */
    RUNNING,
    /** The command exited 0; written by its worker's end. Terminal. */
    SUCCEEDED,
    /** Exited non-zero, could not run, or reaped when its attempts ran out (the sweep). Terminal. */
    FAILED,
    /** Ran past its timeout and was killed; written by its worker's end. Terminal. */
    TIMED_OUT,
    /** Cancelled: a cancel of a queued row, its worker's end after a cancel, or the sweep. Terminal. */
    CANCELLED;

    public boolean isTerminal() {
        return this != QUEUED && this != RUNNING;
    }

    /** The states this one may move to. */
    public Set<ExecutionStatus> next() {
        return switch (this) {
            case QUEUED -> EnumSet.of(RUNNING, CANCELLED);
            case RUNNING -> EnumSet.of(SUCCEEDED, FAILED, TIMED_OUT, CANCELLED, QUEUED);
            default -> EnumSet.noneOf(ExecutionStatus.class);
        };
    }

    public boolean canMoveTo(ExecutionStatus target) {
        return next().contains(target);
    }

    /** The name stored in the database and shown by the API. */
    public String wire() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static ExecutionStatus fromWire(String value) {
        for (ExecutionStatus status : values()) {
            if (status.wire().equals(value)) {
                return status;
            }
        }
        throw new IllegalArgumentException("unknown execution status: " + value);
    }
}
