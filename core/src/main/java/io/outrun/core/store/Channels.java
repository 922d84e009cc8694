package io.outrun.core.store;

/** PostgreSQL NOTIFY channels that nodes LISTEN on. */
public final class Channels {
    /** Work was enqueued: a node with a free slot onboards it now instead of at its next poll. */
    public static final String WAKE = "outrun_wake";
    /** An owner asked to cancel the running execution whose id is the payload. */
    public static final String CANCEL = "outrun_cancel";

    /** An owner wrote to the stdin of the execution whose id is the payload: the node that runs it feeds it. */
    public static final String STDIN = "outrun_stdin";

    /** A worker flushed output of, or finished, the executions whose ids (comma-separated) are the payload. */
    public static final String CHANGED = "outrun_changed";

    /** An execution with a completion webhook ended (V20's trigger): a node sends it now, not at its next look. */
    public static final String WEBHOOK = "outrun_webhook";

    private Channels() {
    }
}
