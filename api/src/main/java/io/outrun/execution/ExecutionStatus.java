package io.outrun.execution;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/**
 * The lifecycle of an execution and its legal moves. The database enforces the same table (the
 * trigger {@code executions_check_transition} of migration V1), so no statement of any node can
 * make an illegal move; {@code ExecutionStoreIT} checks that the two tables agree. Which move a
 * running row makes when it leaves running without ending by itself (re-drive, reap, cancel) is
 * decided in one place, {@code store.Departure}.
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
 * <ul>
 *   <li>{@code queued}: written by the API at submit and by the re-drive sweep; left by a
 *       worker's claim or by a cancel.</li>
 *   <li>{@code running}: written by a worker's claim; left by that worker's fenced finish, or by
 *       the sweep once the lease has expired.</li>
 *   <li>terminal states never change again.</li>
 * </ul>
 */
public enum ExecutionStatus {
    QUEUED, RUNNING, SUCCEEDED, FAILED, TIMED_OUT, CANCELLED;

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
