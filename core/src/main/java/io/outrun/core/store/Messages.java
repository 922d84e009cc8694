package io.outrun.core.store;

/**
 * What the store writes into {@code error_message} when a run leaves {@code running} without ending
 * by itself: for people and agents, passed to SQL as bind parameters, never spliced into it.
 * Templates are PostgreSQL {@code format()} strings; their arguments are listed where used.
 */
public final class Messages {

    static final String CANCELLED_BEFORE_START = "Cancelled by its owner before it started.";
    static final String CANCELLED_WORKER_LOST = "Cancelled by its owner; its worker was lost before it could confirm"
            + " the command stopped (its run kills itself once its lease lapses).";

    static final String CANCELLED_WHILE_DRAINING = "Cancelled by its owner while its worker was draining; the command was"
            + " killed.";

    private Messages() {
    }

    /** Arguments: attempt, max attempts, lease owner, lease expiry. */
    static String leaseExpired() {
        return "Attempt %1$s of %2$s was lost: its worker (%3$s) stopped renewing its lease, which expired at %4$s,"
                + " and no attempts remain. A worker stops renewing when it crashes, is killed (often for memory),"
                + " is paused, or loses the database; its run then kills itself. The output below is what was saved"
                + " before the loss. Resubmit to try again; if every attempt dies the same way, the command itself may"
                + " be killing its worker.";
    }

    /** Arguments: hand-backs so far (5th), the sandbox's last words (7th). */
    public static String handBackFailed() {
        return "No worker's sandbox could start this execution (%5$s tries since it was submitted); the last said: %7$s."
                + " The command never ran. Resubmit once the workers' sandboxes are healthy.";
    }
}
