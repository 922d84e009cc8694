package io.outrun.lease;

import io.outrun.sandbox.Run;
import io.outrun.store.Lease;

/** A run this node holds a lease for, with what its heartbeat learnt about it. */
public final class Tracked {
    private final Lease lease;
    private final Run run;
    private volatile boolean leaseLost;
    private volatile boolean cancelRequested;
    private volatile boolean ending;
    long flushedStdout = -1;
    long flushedStderr = -1;

    Tracked(Lease lease, Run run) {
        this.lease = lease;
        this.run = run;
    }

    public Lease lease() {
        return lease;
    }

    public Run run() {
        return run;
    }

    /** The lease is gone (re-driven or reaped elsewhere): the run was killed; write nothing more. */
    public boolean leaseLost() {
        return leaseLost;
    }

    public boolean cancelRequested() {
        return cancelRequested;
    }

    /** The run exited and its end is being written: the heartbeat no longer speaks for it. */
    public void markEnding() {
        ending = true;
    }

    boolean ending() {
        return ending;
    }

    void loseLease() {
        leaseLost = true;
        run.kill();
    }

    void requestCancel() {
        cancelRequested = true;
        run.kill();
    }
}
