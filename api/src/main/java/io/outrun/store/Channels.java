package io.outrun.store;

/** PostgreSQL NOTIFY channels that nodes LISTEN on. */
public final class Channels {
    /** Work was enqueued: a node with a free slot onboards it now instead of at its next poll. */
    public static final String WAKE = "outrun_wake";
    /** An owner asked to cancel the running execution whose id is the payload. */
    public static final String CANCEL = "outrun_cancel";

    /** A worker flushed output of, or finished, the executions whose ids (comma-separated) are the payload. */
    public static final String CHANGED = "outrun_changed";

    private Channels() {
    }
}
