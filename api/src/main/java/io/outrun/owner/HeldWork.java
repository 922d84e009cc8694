package io.outrun.owner;

import io.outrun.dispatch.Dispatcher;
import io.outrun.execution.Execution;
import io.outrun.store.RedriveStore;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Releases held executions into JobRunr's queue as their owners get room: a claimer releases for
 * the owner it just took a slot of, a run's end for its owner, and the fleet's sweep, once a
 * second, for every owner with held work (what a crash or a raised cap left waiting).
 */
public final class HeldWork {

    private static final Logger LOG = LoggerFactory.getLogger(HeldWork.class);

    private final RedriveStore store;
    private final Dispatcher dispatcher;
    private final OwnerLimits limits;

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

    /** Releases for every owner with held work; returns how many in all. */
    public int releaseAll() {
        int released = 0;
        for (String owner : store.ownersWithHeld()) {
            released += release(owner);
        }
        return released;
    }
}
