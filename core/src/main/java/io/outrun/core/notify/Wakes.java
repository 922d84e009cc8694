package io.outrun.core.notify;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The wake-ups of dispatch: new work wakes as many nodes as it needs to claim it, a full node
 * passes a wake-up on, and a change or a cancel is told to whoever waits for it. Every wake-up is
 * a hint that only saves latency (nodes still find work at their next poll and cancels at their
 * next heartbeat), so none of these ever throws.
 */
public final class Wakes implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Wakes.class);

    private final Notifier notifier;
    /** Work handed to the fleet since the last wake-up was sent: how many nodes the next one wakes. */
    private final AtomicInteger wakesWanted = new AtomicInteger();
    private final ExecutorService waker = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "outrun-waker");
        t.setDaemon(true);
        return t;
    });

    public Wakes(Notifier notifier) {
        this.notifier = notifier;
    }

    /**
     * Tells the fleet there is one more piece of new work: one node with a free slot is woken on
     * its own channel (see {@link Notifier#wakeNodes}), never the whole fleet, which would
     * send every idle node into a claim for one execution. The NOTIFY is sent by one
     * background thread, and wake-ups that arrive while one is pending share its statement (it
     * wakes as many nodes as there were wake-ups): under load a submit pays no round trip for it.
     */
    public void wake() {
        wake(1);
    }

    /**
     * Tells the fleet there are {@code pieces} more pieces of new work (a batch of submissions):
     * one wake-up, sent as {@link #wake()}'s, for as many nodes as there are pieces.
     */
    public void wake(int pieces) {
        if (pieces > 0 && wakesWanted.getAndAdd(pieces) == 0) {
            try {
                waker.execute(() -> {
                    int wanted = wakesWanted.getAndSet(0);
                    if (wanted == 0) {
                        return;
                    }
                    try {
                        notifier.wakeNodes(wanted);
                    } catch (RuntimeException e) {
                        LOG.warn("could not wake nodes; they find the work at their next poll", e);
                    }
                });
            } catch (RejectedExecutionException stopping) {
                // Closed: this node is stopping, and the submit that woke is stored all the same.
                wakesWanted.set(0);
            }
        }
    }

    /** See {@link Notifier#relayWake}; never throws (a lost relay costs at most a poll interval). */
    public void relayWake(String ownChannel) {
        try {
            notifier.relayWake(ownChannel);
        } catch (RuntimeException e) {
            LOG.warn("could not relay a wake-up; the work starts at a run's end or the next poll", e);
        }
    }

    /**
     * Sends a notification to the fleet. A lost one costs only latency: nodes still find work at
     * their next poll and cancels at their next heartbeat.
     */
    public void wake(String channel, String payload) {
        try {
            notifier.notify(channel, payload);
        } catch (RuntimeException e) {
            LOG.warn("could not notify {}; the fleet falls back to polling", channel, e);
        }
    }

    /** Sends what wake-up is pending, then stops the waker thread. */
    @Override
    public void close() {
        waker.shutdown();
        try {
            waker.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
