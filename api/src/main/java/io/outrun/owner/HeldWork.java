package io.outrun.owner;

import io.outrun.dispatch.Dispatcher;
import io.outrun.execution.Execution;
import io.outrun.store.RedriveStore;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Releases held executions into JobRunr's queue as their owners get room: a claimer releases for
 * the owner it just took a slot of, a run's end for its owner, and the fleet's sweep, once a
 * second, for every owner with held work (what a crash or a raised cap left waiting).
 *
 * <p>A claimer and a run's end ask for it with {@link #releaseSoon} and {@link #releaseIfHeldSoon}:
 * one background thread releases, so that a run's slot never waits for another owner's
 * bookkeeping, and asks that arrive while it is busy are merged (one release per owner per pass,
 * which takes as many as the owner has room for). A pass lost to a crash is the sweep's to repeat.
 */
public final class HeldWork implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(HeldWork.class);

    private final RedriveStore store;
    private final Dispatcher dispatcher;
    private final OwnerLimits limits;
    /** Owners to release for, and whether they are known to have held work (false: ask first). */
    private final Map<String, Boolean> pending = new ConcurrentHashMap<>();
    private final AtomicBoolean passScheduled = new AtomicBoolean();
    private final ExecutorService releaser = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "outrun-held-releaser");
        t.setDaemon(true);
        return t;
    });

    public HeldWork(RedriveStore store, Dispatcher dispatcher, OwnerLimits limits) {
        this.store = store;
        this.dispatcher = dispatcher;
        this.limits = limits;
    }

    public OwnerLimits limits() {
        return limits;
    }

    /** Releases what {@code owner} has room for; returns how many. Never throws (the sweep repeats it). */
    public int release(String owner) {
        try {
            List<Execution> released = store.releaseHeld(owner, limits.maxRunning(), limits.window());
            for (Execution e : released) {
                dispatcher.enqueue(e.id(), e.dispatchSeq(), e.owner(), e.command(), e.attempt() + 1);
                dispatcher.wake(); // one node per job, as a submission wakes
            }
            return released.size();
        } catch (RuntimeException e) {
            // Released rows whose job was not enqueued are lost dispatches: the sweep enqueues them.
            LOG.warn("could not release held executions of {} ({}); the sweep tries again", owner, e.toString());
            return 0;
        }
    }

    /**
     * At a run's end: releases for {@code owner} if it has held work now. Work held after the
     * run's claim (at insert, or by another claim, while this one ran) is not in the claim's
     * answer, and without this would wait for the fleet's next sweep. Never throws.
     */
    public int releaseIfHeld(String owner) {
        try {
            return store.ownerHasHeld(owner) ? release(owner) : 0;
        } catch (RuntimeException e) {
            LOG.warn("could not look for held executions of {} ({}); the sweep releases them", owner, e.toString());
            return 0;
        }
    }

    /** As {@link #release(String)}, on the background thread, merged with other asks for the owner. */
    public void releaseSoon(String owner) {
        schedule(owner, true);
    }

    /** As {@link #releaseIfHeld(String)}, on the background thread, merged with other asks for the owner. */
    public void releaseIfHeldSoon(String owner) {
        schedule(owner, false);
    }

    private void schedule(String owner, boolean known) {
        pending.merge(owner, known, Boolean::logicalOr);
        if (passScheduled.compareAndSet(false, true)) {
            try {
                releaser.execute(this::pass);
            } catch (RejectedExecutionException closing) {
                passScheduled.set(false); // closing: the sweep of a live node releases it
            }
        }
    }

    private void pass() {
        // Reset before reading: an ask that comes after this line schedules the next pass.
        passScheduled.set(false);
        for (String owner : List.copyOf(pending.keySet())) {
            Boolean known = pending.remove(owner);
            if (Boolean.TRUE.equals(known)) {
                release(owner);
            } else if (known != null) {
                releaseIfHeld(owner);
            }
        }
    }

    /** Lets a pass under way finish (its owner's core closes next), then stops; what is left is the sweep's. */
    @Override
    public void close() {
        releaser.shutdown();
        try {
            if (!releaser.awaitTermination(2, java.util.concurrent.TimeUnit.SECONDS)) {
                releaser.shutdownNow();
            }
        } catch (InterruptedException e) {
            releaser.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    /** Releases for every owner with held work; returns how many in all. */
    public int releaseAll() {
        int released = 0;
        for (String owner : store.ownersWithHeld()) {
            released += release(owner);
        }
        return released;
    }
}
