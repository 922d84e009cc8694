package io.outrun.worker.maintenance;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a node's {@link Periodic} loops on one daemon thread, each at a fixed delay after its
 * previous pass. A pass that throws is logged and never ends its loop (a bare
 * {@code scheduleWithFixedDelay} would stop it for good). {@link #close()} stops all loops and
 * interrupts a pass in progress; start and close may each be called more than once.
 */
public final class Maintenance implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Maintenance.class);

    private final String thread;
    private final List<Periodic> loops = new ArrayList<>();
    private ScheduledExecutorService timer;
    private boolean closed;

    /** @param thread name of the loops' thread */
    public Maintenance(String thread) {
        this.thread = thread;
    }

    /** Adds a loop; it runs once {@link #start()} is called. */
    public synchronized Maintenance add(Periodic loop) {
        if (timer != null) {
            throw new IllegalStateException("add loops before start: " + loop.name());
        }
        loops.add(loop);
        return this;
    }

    public synchronized void start() {
        if (timer != null || closed) {
            return;
        }
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, thread);
            t.setDaemon(true);
            return t;
        });
        for (Periodic loop : loops) {
            long every = loop.interval().toMillis();
            timer.scheduleWithFixedDelay(() -> pass(loop), every, every, TimeUnit.MILLISECONDS);
        }
    }

    /** The names of the loops, for the start-up log. */
    public synchronized List<String> names() {
        return loops.stream().map(l -> l.name() + " every " + l.interval().toMillis() + " ms").toList();
    }

    private static void pass(Periodic loop) {
        try {
            loop.runOnce();
        } catch (RuntimeException e) {
            LOG.warn("{} failed; retrying in {} ms", loop.name(), loop.interval().toMillis(), e);
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (timer == null) {
            return;
        }
        // No wait: a pass stuck on a hung database must not hold up the node's stop.
        timer.shutdownNow();
    }
}
