package io.outrun.core.owner;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The queued cap, checked at submission. Counting an owner's queued executions on every submit
 * would cost a flood the most exactly when it must cost least, so each API node counts an owner
 * at most once per {@link #FRESH} and adds what it accepted since: the cap may be passed by what
 * other API nodes accept within that time, and a refusal lasts until the next count.
 */
public final class QueueGate {

    static final Duration FRESH = Duration.ofSeconds(1);
    private static final int MAX_OWNERS = 10_000;

    private final OwnerStore owners;
    private final int defaultCap;
    private final Map<String, Count> counts = new ConcurrentHashMap<>();

    private record Count(long queued, int cap, long readAt, AtomicLong since) {
    }

    public QueueGate(OwnerStore owners, int defaultCap) {
        this.owners = owners;
        this.defaultCap = defaultCap;
    }

    /** Admits one more queued execution of {@code owner}, or throws {@link TooManyQueuedException}. */
    public void admit(String owner) {
        long now = System.nanoTime();
        Count c = counts.get(owner);
        if (c == null || now - c.readAt > FRESH.toNanos()) {
            OwnerStore.Queued q = owners.queued(owner, defaultCap);
            if (counts.size() >= MAX_OWNERS) {
                counts.clear(); // a flood of owners must not grow memory; a reset costs a count each
            }
            c = new Count(q.count(), q.ownCap() != null ? q.ownCap() : defaultCap, now, new AtomicLong());
            counts.put(owner, c);
        }
        long queued = c.queued + c.since.get();
        if (queued >= c.cap) {
            throw new TooManyQueuedException(owner, queued, c.cap);
        }
        c.since.incrementAndGet();
    }
}
