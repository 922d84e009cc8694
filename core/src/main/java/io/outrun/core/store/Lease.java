package io.outrun.core.store;

import java.util.UUID;

/**
 * The fence of every worker write: one claim of one execution. The epoch is taken anew by every
 * claim and never reused (not even by a hand-back), so {@code (executionId, epoch)} names exactly
 * one run; {@code holder} is the claiming node's incarnation (node id and a per-process id); the
 * execution's owner (its tenant) is another thing. (The {@code leases} table's column for it is
 * still {@code owner}: see {@code Execution} on why columns keep their names.)
 *
 * @param attempt the attempt number this run counts as (for people and logs, not for fencing)
 */
public record Lease(UUID executionId, long epoch, int attempt, String holder) {

    /**
     * How long past a lease's expiry the sweep waits before it re-drives: longer than the time a
     * run's kill switch may take to notice and act (it checks once a second), so the old run is
     * dead before the next attempt can start.
     */
    public static final long REDRIVE_GRACE_MS = 3000;
}
