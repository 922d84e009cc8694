package io.outrun.core.notify;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Lets request threads wait for "execution X changed" (new output, a new state) without polling
 * the database in a loop: the node's {@link Listener} signals them when a worker NOTIFYs.
 */
public final class ChangeSignal {

    private final Map<UUID, Long> versions = new ConcurrentHashMap<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();

    /** Handler for {@code outrun_changed}: the payload is comma-separated execution ids. */
    public void onNotification(String payload) {
        if (payload == null || payload.isBlank()) {
            return;
        }
        for (String part : payload.split(",")) {
            try {
                // Only executions someone waits on are counted: memory stays flat.
                versions.computeIfPresent(UUID.fromString(part.trim()), (k, v) -> v + 1);
            } catch (IllegalArgumentException ignored) {
                // Not ours.
            }
        }
        lock.lock();
        try {
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** A token to pass to {@link #await}: changes after it wake the waiter. */
    public long version(UUID id) {
        if (versions.size() > 100_000) {
            // Waiters re-check the database at least every second, so a reset loses nothing.
            versions.clear();
        }
        return versions.computeIfAbsent(id, k -> 0L);
    }

    /**
     * Waits until {@code id} changes after {@code seenVersion}, or the wait ends.
     *
     * @return true when a change arrived
     */
    public boolean await(UUID id, long seenVersion, long waitMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMillis);
        lock.lock();
        try {
            while (versions.getOrDefault(id, seenVersion) == seenVersion) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                changed.awaitNanos(left);
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

}
