package io.outrun.worker.dispatch;

import io.outrun.core.store.Outage;
import io.outrun.worker.lease.LeaseStore.Batch;
import io.outrun.worker.lease.LeaseStore.Claimed;
import io.outrun.worker.lease.LeaseStore;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How work reaches this node's slots: one loop that claims queued executions (River's producer is
 * the model). It looks when there is a reason to: a wake-up (the NOTIFY a submit, a re-drive or
 * another node sends), a slot that frees while its last look left queued work behind (beyond its
 * free slots, or held back by an owner's cap or a busy workspace, which that run's end may
 * release), or the fallback poll (a lost NOTIFY, a hand-back whose pause ended). Each
 * look is one statement ({@link LeaseStore#claim(String, int, Duration, Integer)}) that claims up
 * to the free slots fairly between owners; each claimed execution runs on a thread of its own.
 * A node that drains claims nothing.
 *
 * <p>A wake-up meant for a free node that finds this one full is passed on to the other nodes
 * ({@code relay}), so that new work never waits for this node's next run to end.
 */
public final class ClaimLoop implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ClaimLoop.class);
    /** Pause after a look that lost some rows to another node's claim of the same rows. */
    private static final long CONTENDED_PAUSE_MS = 5;
    private static final long FAILED_PAUSE_MS = 1000;
    /** Longer than a claim statement may take (its query timeout is 10 s). */
    private static final long LOOK_BOUND_MS = 12_000;

    /** The one call per look: claim up to {@code slots}. */
    public interface Claimer {
        Batch claim(int slots);
    }

    /**
     * Runs one claimed execution to its end; {@code claimSentNanos}, {@code claimEndNanos}: when
     * its claim was sent and answered ({@link System#nanoTime()}).
     * Returns true when queued work may take the slot it frees now (its owner's cap or workspace
     * held some back): the node looks at once.
     */
    public interface Runner {
        boolean run(Claimed claimed, long claimSentNanos, long claimEndNanos);
    }

    private final Claimer claimer;
    private final int slots;
    private final Duration poll;
    private final Runner run;
    private final Consumer<Claimed> handBack;
    private final BooleanSupplier draining;
    private final Runnable relay;
    private final ExecutorService runners;
    private final Thread thread;
    private final AtomicInteger looks = new AtomicInteger();
    // Guarded by this.
    private int busy;
    private boolean wanted = true;
    private boolean moreWaiting;
    /** When (nanoTime) a queued row that was not claimable yet becomes so; {@link Long#MAX_VALUE}: none known. */
    private long dueAt = Long.MAX_VALUE;
    private boolean closed;

    /**
     * @param run      runs one claimed execution to its end (on a thread of its own)
     * @param handBack hands back, without spending an attempt, a claim this node stopped before
     *                 it could start it
     * @param draining true while the node drains: it claims nothing
     * @param relay    passes a wake-up on to the other nodes
     */
    public ClaimLoop(String node, int slots, Duration poll, Claimer claimer, Runner run,
                     Consumer<Claimed> handBack, BooleanSupplier draining, Runnable relay) {
        this.claimer = claimer;
        this.handBack = handBack;
        this.slots = slots;
        this.poll = poll;
        this.run = run;
        this.draining = draining;
        this.relay = relay;
        AtomicInteger n = new AtomicInteger();
        this.runners = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "outrun-run-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.thread = new Thread(this::loop, "outrun-claim-" + node);
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * New work may wait (a NOTIFY on this node's channel). {@code payload} {@code "free"}: this node
     * was woken because it looked free; when it is full now, the wake-up is passed on.
     */
    public void wake(String payload) {
        boolean full;
        synchronized (this) {
            wanted = true;
            full = busy >= slots;
            notifyAll();
        }
        if (full && "free".equals(payload)) {
            relay.run();
        }
    }

    /** A run ended; {@code look}: its end may have let held-back work start. */
    private synchronized void slotFreed(boolean look) {
        busy--;
        if (moreWaiting || look) {
            wanted = true; // the last look left queued work, or this end released some: this slot may take it
        }
        notifyAll();
    }

    private void loop() {
        long nextPoll = System.nanoTime() + poll.toNanos();
        while (true) {
            int free;
            boolean relayDue = false;
            synchronized (this) {
                while (!closed) {
                    long now = System.nanoTime();
                    if (now - nextPoll >= 0) {
                        // The poll is for free slots only: a full node looks when a slot frees.
                        wanted |= busy < slots;
                        nextPoll = now + poll.toNanos();
                    }
                    if (dueAt != Long.MAX_VALUE && now - dueAt >= 0) {
                        dueAt = Long.MAX_VALUE;
                        if (busy < slots) {
                            wanted = true; // a delayed start (or a backoff, a hand-back's pause) is due
                        } else {
                            relayDue = true; // full: a free node that never heard of it takes it
                            break;
                        }
                    }
                    if (wanted && busy < slots && !draining.getAsBoolean()) {
                        break;
                    }
                    long until = dueAt != Long.MAX_VALUE && dueAt - nextPoll < 0 ? dueAt : nextPoll;
                    try {
                        wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(until - now)));
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                if (closed) {
                    return;
                }
                if (!relayDue) {
                    wanted = false;
                }
                free = slots - busy;
            }
            if (relayDue) {
                relay.run();
                continue;
            }
            long pause = look(free);
            if (pause > 0) {
                try {
                    Thread.sleep(pause);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    /** One look for work; returns how long to pause before the next (0: none). */
    private long look(int free) {
        Batch batch;
        long sent = System.nanoTime();
        try {
            looks.incrementAndGet();
            batch = claimer.claim(free);
        } catch (RuntimeException e) {
            if (Outage.diskFull(e)) {
                // The claim is one statement: nothing was claimed, so no attempt is spent.
                LOG.warn("could not claim executions: the database's disk is full; nothing starts until an operator"
                        + " frees space (looking again in {} ms)", FAILED_PAUSE_MS);
            } else {
                LOG.warn("could not claim executions ({}); looking again in {} ms", e.toString(), FAILED_PAUSE_MS);
            }
            synchronized (this) {
                wanted = true;
            }
            return FAILED_PAUSE_MS;
        }
        long answered = System.nanoTime();
        boolean stopping;
        synchronized (this) {
            stopping = closed;
            if (!stopping) {
                busy += batch.claimed().size();
            }
            moreWaiting = batch.more();
            // A row due later: look then (a millisecond past it, by the database's clock), not at the next poll.
            dueAt = batch.nextDueMs() == null ? Long.MAX_VALUE
                    : sent + TimeUnit.MILLISECONDS.toNanos(Math.max(0, batch.nextDueMs()) + 1);
            if (batch.contended()) {
                wanted = true; // another node took some of the rows picked: others may be left
            }
        }
        if (stopping) {
            // The node stops while this claim was under way: none of it started here.
            batch.claimed().forEach(handBack);
            return 0;
        }
        for (Claimed c : batch.claimed()) {
            try {
                runners.execute(() -> {
                    boolean look = false;
                    try {
                        look = run.run(c, sent, answered);
                    } catch (RuntimeException | Error e) {
                        LOG.error("the run of execution {} failed; its lease expires and the sweep re-drives it",
                                c.execution().id(), e);
                    } finally {
                        slotFreed(look);
                    }
                });
            } catch (RejectedExecutionException closing) {
                // Stopping: never started, so handed back without spending an attempt.
                handBack.accept(c);
                slotFreed(false);
            }
        }
        return batch.contended() ? CONTENDED_PAUSE_MS : 0;
    }

    /** Executions this node runs or starts now. */
    public synchronized int busy() {
        return busy;
    }

    /** Looks for work since the start (tests, metrics). */
    public int looks() {
        return looks.get();
    }

    /**
     * Stops claiming, then interrupts the runs and waits for them up to {@code within}: each run's
     * interrupt kills and removes it, and its lease decides what happens next.
     */
    public void close(Duration within) {
        synchronized (this) {
            closed = true;
            notifyAll();
        }
        try {
            // A claim under way is let finish (its statement is bounded): what it won is handed back.
            thread.join(LOOK_BOUND_MS);
            if (thread.isAlive()) {
                thread.interrupt();
                thread.join(1000);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        runners.shutdownNow();
        try {
            if (!runners.awaitTermination(within.toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.warn("runs still stopping after {} ms", within.toMillis());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(5));
    }
}
