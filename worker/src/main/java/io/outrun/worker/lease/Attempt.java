package io.outrun.worker.lease;

import io.outrun.core.execution.Execution;
import io.outrun.core.store.Chunk;
import io.outrun.core.store.Lease;
import io.outrun.core.store.OutputUpdate;
import io.outrun.core.trace.AttemptTrace;
import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Run;
import java.util.ArrayList;
import java.util.List;

/**
 * One claim being run on this node, from its claim to its end: the one object the job, the
 * heartbeat, the watchdog and the clean-up all speak about.
 *
 * <p>The words (the README's "Words" table is the glossary): a <b>claim</b> is what this is;
 * <b>hand back</b>, <b>drain</b>, <b>abandon</b> and <b>retry</b> are the ways it leaves without
 * an end of its execution; <b>lease lost</b>: this node may no longer speak for the run, which is
 * killed, and nothing more is written for it (the sweep will <b>re-drive</b> or <b>reap</b>).
 *
 * <p>The heartbeat and the watchdog only set flags here; the watchdog's killer thread does the
 * engine calls, never under a lock, and re-sends a kill until the run is gone.
 */
public final class Attempt {

    /** Where a claim stands on this node. */
    public enum State {
        /** Claimed; the sandbox is starting its run. */
        STARTING,
        /** Its run is executing. */
        RUNNING,
        /** Its run exited; its end is being written. */
        ENDING,
        /** Forgotten by this node. */
        DONE
    }

    private final Lease lease;
    private final int maxOutputBytes;
    private volatile State state = State.STARTING;
    private volatile Run run;
    private volatile boolean leaseLost;
    private volatile String lostWhy;
    private volatile boolean cancelRequested;
    private volatile boolean drained;
    /** Past this (System.nanoTime), the lease may have lapsed: the watchdog kills the run. */
    private volatile long deadlineNanos;
    private volatile long endingSinceNanos;
    /** When the run's own kill switch fires (epoch ms) unless its lease file is rewritten. */
    private volatile long killSwitchAtMillis = Long.MAX_VALUE;
    /** The killer thread is on it: at most one engine call in flight per attempt. */
    volatile boolean killInFlight;
    volatile long lastKillNanos;
    final OutputTracker stdout;
    final OutputTracker stderr;
    /** Its spans (none until its runner says); the flush records sampled ones. */
    private volatile AttemptTrace trace = AttemptTrace.none(null);

    Attempt(Lease lease, int maxOutputBytes, long deadlineNanos) {
        this.lease = lease;
        this.maxOutputBytes = maxOutputBytes;
        this.deadlineNanos = deadlineNanos;
        this.stdout = new OutputTracker(1, maxOutputBytes);
        this.stderr = new OutputTracker(2, maxOutputBytes);
    }

    public static Lease leaseOf(Execution claimed) {
        return new Lease(claimed.id(), claimed.leaseEpoch(), claimed.attempt(), claimed.leaseHolder());
    }

    public AttemptTrace trace() {
        return trace;
    }

    public void traced(AttemptTrace spans) {
        this.trace = spans;
    }

    public Lease lease() {
        return lease;
    }

    public State state() {
        return state;
    }

    public Run run() {
        return run;
    }

    /** The lease is gone (re-driven or reaped elsewhere, or it may have lapsed): write nothing more. */
    public boolean leaseLost() {
        return leaseLost;
    }

    String lostWhy() {
        return lostWhy;
    }

    public boolean cancelRequested() {
        return cancelRequested;
    }

    long deadlineNanos() {
        return deadlineNanos;
    }

    /**
     * True once no renewal was confirmed in time (the last confirmed one + ttl − margin): the
     * lease may have lapsed, so whatever this attempt still wants to write is the sweep's to
     * decide. Unlike {@link #leaseLost()}, also for a run whose end is being written.
     */
    public boolean pastDeadline() {
        return System.nanoTime() - deadlineNanos > 0;
    }

    long endingSinceNanos() {
        return endingSinceNanos;
    }

    /** Its node drains and gives it back: the run is killed and handed back, no attempt spent. */
    public boolean drained() {
        return drained;
    }

    synchronized boolean drain() {
        if (drained || state == State.DONE || state == State.ENDING) {
            return false;
        }
        drained = true;
        return true;
    }

    /** True while the run may still be executing and must be killed if asked. */
    boolean wantsKill() {
        return run != null && (leaseLost || cancelRequested || drained) && state != State.DONE;
    }

    synchronized void started(Run started) {
        this.run = started;
        if (state == State.STARTING) {
            state = State.RUNNING;
        }
    }

    /** Its run exited: the end is being written (renewed a little longer, never for ever). */
    public synchronized void ending() {
        if (state == State.RUNNING) {
            state = State.ENDING;
            endingSinceNanos = System.nanoTime();
        }
    }

    synchronized void done() {
        state = State.DONE;
    }

    /** @return true the first time (for the metric and the log) */
    public synchronized boolean loseLease(String why) {
        if (leaseLost || state == State.DONE) {
            return false;
        }
        leaseLost = true;
        lostWhy = why;
        return true;
    }

    /** @return true the first time */
    synchronized boolean requestCancel() {
        if (cancelRequested) {
            return false;
        }
        cancelRequested = true;
        return true;
    }

    /** A renewal sent at {@code sentNanos} was confirmed: the lease holds until at least then + ttl. */
    void confirmed(long newDeadlineNanos) {
        if (newDeadlineNanos - deadlineNanos > 0) {
            deadlineNanos = newDeadlineNanos;
        }
    }

    void killSwitchAt(long millis) {
        killSwitchAtMillis = millis;
    }

    /**
     * True when a SIGKILL exit came when the run's own kill switch was due: the lease may have
     * lapsed (the worker was paused or cut off), so it is not the command's end.
     */
    public boolean killedBySwitch(Exit exit) {
        return exit.exitCode() == Exit.SIGKILL_EXIT && !exit.killed() && !exit.oomKilled()
                && System.currentTimeMillis() >= killSwitchAtMillis;
    }

    /** The output not yet stored, for the end's own write (nothing is dropped at the end), with the totals it reaches. */
    public record Last(OutputUpdate update, long stdoutTotal, long stderrTotal) {
    }

    public Last lastOutput() {
        List<Chunk> chunks = new ArrayList<>();
        long out = 0;
        long err = 0;
        if (run != null) {
            OutputTracker.Next o = stdout.next(lease, run);
            OutputTracker.Next e = stderr.next(lease, run);
            chunks.addAll(o.chunks());
            chunks.addAll(e.chunks());
            out = o.reaches();
            err = e.reaches();
        }
        return new Last(new OutputUpdate(lease, chunks, 0, 0), out, err);
    }

    int maxOutputBytes() {
        return maxOutputBytes;
    }

    @Override
    public String toString() {
        return "execution " + lease.executionId() + " attempt " + lease.attempt() + " (epoch " + lease.epoch() + ")";
    }
}
