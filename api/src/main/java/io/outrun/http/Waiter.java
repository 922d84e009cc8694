package io.outrun.http;

import io.outrun.notify.ChangeSignal;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Holds a request until what it waits for is there (new output, the end) or its wait is over.
 * Woken by {@link ChangeSignal} when a worker NOTIFYs; re-reads the database at least every
 * second anyway, because a notification can be lost (listener reconnecting, another API node).
 * A bounded number of requests wait at once; the rest answer at once, so waiting requests can
 * never take every server thread.
 */
final class Waiter {

    private static final long RECHECK_MS = 1000;

    private final ChangeSignal signal;
    private final Semaphore slots;
    private final int maxWaiters;

    Waiter(ChangeSignal signal, int maxWaiters) {
        this.signal = signal;
        this.maxWaiters = maxWaiters;
        this.slots = new Semaphore(maxWaiters);
    }

    /** Requests held now. */
    int waiting() {
        return maxWaiters - slots.availablePermits();
    }

    /** Reads with {@code probe} until {@code ready} holds or {@code waitMs} passed; returns the last read. */
    <T> T await(UUID id, long waitMs, Supplier<T> probe, Predicate<T> ready) {
        long deadline = System.nanoTime() + waitMs * 1_000_000L;
        boolean waiting = waitMs > 0 && slots.tryAcquire();
        try {
            while (true) {
                // Take the version before reading: a change between read and wait then still wakes us.
                long version = signal.version(id);
                T value = probe.get();
                long leftMs = (deadline - System.nanoTime()) / 1_000_000L;
                if (!waiting || leftMs <= 0 || ready.test(value)) {
                    return value;
                }
                signal.await(id, version, Math.min(leftMs, RECHECK_MS));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return probe.get();
        } finally {
            if (waiting) {
                slots.release();
            }
        }
    }
}
