package io.outrun.api.http;

import io.outrun.core.notify.ChangeSignal;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Holds a request until what it waits for is there (new output, the end) or its wait is over.
 * Woken by {@link ChangeSignal} when a worker NOTIFYs; re-reads the database at least every
 * second anyway, because a notification can be lost (listener reconnecting, another API node).
 * A bounded number of requests wait at once; the rest answer at once, so waiting requests can
 * never take every server thread. One owner holds at most an eighth of the places (at least one),
 * so one owner's flood of long polls cannot make every other owner's waits answer at once.
 */
final class Waiter {

    private static final long RECHECK_MS = 1000;

    private final ChangeSignal signal;
    private final Semaphore slots;
    private final int maxWaiters;
    private final int maxPerOwner;
    private final ConcurrentHashMap<String, Integer> byOwner = new ConcurrentHashMap<>();

    Waiter(ChangeSignal signal, int maxWaiters) {
        this.signal = signal;
        this.maxWaiters = maxWaiters;
        this.maxPerOwner = Math.max(1, maxWaiters / 8);
        this.slots = new Semaphore(maxWaiters);
    }

    /** Requests held now. */
    int waiting() {
        return maxWaiters - slots.availablePermits();
    }

    /**
     * Reads with {@code probe} until {@code ready} holds or {@code waitMs} passed; returns the
     * last read. Without a free place (of all, or of {@code owner}'s share) it answers at once.
     */
    <T> T await(String owner, UUID id, long waitMs, Supplier<T> probe, Predicate<T> ready) {
        boolean waiting = waitMs > 0 && take(owner);
        try {
            return waiting ? poll(id, waitMs, probe, ready) : probe.get();
        } finally {
            if (waiting) {
                release(owner);
            }
        }
    }

    /**
     * A place held for a long-lived reader (an event stream) until closed; null when none is
     * free (of all, or of {@code owner}'s share).
     */
    Place hold(String owner) {
        return take(owner) ? () -> release(owner) : null;
    }

    /** A held place; closing it gives it back. */
    interface Place extends AutoCloseable {
        @Override
        void close();
    }

    /** As {@link #await}, in a place already held. */
    <T> T poll(UUID id, long waitMs, Supplier<T> probe, Predicate<T> ready) {
        long deadline = System.nanoTime() + waitMs * 1_000_000L;
        try {
            while (true) {
                // Take the version before reading: a change between read and wait then still wakes us.
                long version = signal.version(id);
                T value = probe.get();
                long leftMs = (deadline - System.nanoTime()) / 1_000_000L;
                if (leftMs <= 0 || ready.test(value)) {
                    return value;
                }
                signal.await(id, version, Math.min(leftMs, RECHECK_MS));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return probe.get();
        }
    }

    private void release(String owner) {
        byOwner.computeIfPresent(owner, (k, n) -> n <= 1 ? null : n - 1);
        slots.release();
    }

    private boolean take(String owner) {
        boolean[] taken = {false};
        byOwner.compute(owner, (k, n) -> {
            int held = n == null ? 0 : n;
            if (held >= maxPerOwner || !slots.tryAcquire()) {
                return n;
            }
            taken[0] = true;
            return held + 1;
        });
        return taken[0];
    }
}
