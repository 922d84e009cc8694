package io.outrun.worker.attempt;

import io.outrun.core.store.StdinStore;
import io.outrun.sandbox.Run;
import java.io.IOException;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Feeds what owners write to stdin (the {@code execution_stdin} table) to the runs of this node
 * that keep stdin open: one small thread per such run, woken by the NOTIFY each write sends
 * ({@link #wake}) and, should one be missed, every {@link #FALLBACK} anyway. Each run starts
 * from byte 0, so a re-run attempt gets everything written so far; within a run every byte is
 * written once, in order.
 */
public final class StdinFeeds {

    private static final Logger LOG = LoggerFactory.getLogger(StdinFeeds.class);
    /** How often a feed looks without a wake-up (a NOTIFY lost while the listener reconnected). */
    static final long FALLBACK = TimeUnit.SECONDS.toMillis(2);

    private final StdinStore store;
    private final Map<UUID, Feed> feeds = new ConcurrentHashMap<>();

    public StdinFeeds(StdinStore store) {
        this.store = store;
    }

    /** Starts feeding {@code run}, the running attempt of execution {@code id}; close the feed when the run ends. */
    public Feed start(UUID id, Run run) {
        Feed feed = new Feed(id, run);
        feeds.put(id, feed);
        feed.thread.start();
        return feed;
    }

    /** An owner wrote to the stdin of {@code id}: its feed looks now (ignored when it does not run here). */
    public void wake(UUID id) {
        Feed feed = feeds.get(id);
        if (feed != null) {
            feed.wake();
        }
    }

    /** One run's feed. */
    public final class Feed implements AutoCloseable {
        private final UUID id;
        private final Run run;
        private final Thread thread;
        private boolean woken;
        private volatile boolean stopped;
        /** Bytes of the stdin written to this run so far. */
        private long delivered;

        private Feed(UUID id, Run run) {
            this.id = id;
            this.run = run;
            this.thread = new Thread(this::loop, "outrun-stdin-" + id);
            this.thread.setDaemon(true);
        }

        private synchronized void wake() {
            woken = true;
            notifyAll();
        }

        private void loop() {
            while (!stopped) {
                boolean full;
                try {
                    Optional<StdinStore.Pending> pending = store.pending(id, delivered);
                    if (pending.isEmpty()) {
                        return; // the execution is gone
                    }
                    StdinStore.Pending p = pending.get();
                    for (StdinStore.Pending.Chunk chunk : p.chunks()) {
                        int skip = (int) (delivered - chunk.offset());
                        if (skip < 0) {
                            break; // not contiguous (never expected): read again from what was delivered
                        }
                        if (skip < chunk.data().length) {
                            byte[] bytes = skip == 0 ? chunk.data()
                                    : Arrays.copyOfRange(chunk.data(), skip, chunk.data().length);
                            run.writeStdin(bytes);
                            delivered += bytes.length;
                        }
                    }
                    if (p.closed() && delivered >= p.total()) {
                        run.closeStdin();
                        LOG.debug("execution {}: stdin closed after {} bytes", id, delivered);
                        return;
                    }
                    full = p.chunks().size() >= 64;
                } catch (IOException e) {
                    // The command closed its stdin or ended: nothing more can reach it.
                    LOG.debug("execution {}: its run takes no more stdin ({})", id, e.toString());
                    return;
                } catch (RuntimeException e) {
                    // The database is away: the bytes stay stored; look again after the fallback.
                    LOG.warn("execution {}: cannot read its stdin now ({}); trying again", id, e.toString());
                    full = false;
                }
                if (!full && !await()) {
                    return;
                }
            }
        }

        /** Waits for a wake-up or the fallback; false once stopped. */
        private synchronized boolean await() {
            try {
                long until = System.currentTimeMillis() + FALLBACK;
                while (!woken && !stopped) {
                    long left = until - System.currentTimeMillis();
                    if (left <= 0) {
                        break;
                    }
                    wait(left);
                }
            } catch (InterruptedException e) {
                return false;
            }
            woken = false;
            return !stopped;
        }

        /** The run ended: the feed stops (a write blocked on a full pipe ends with the run's pipe). */
        @Override
        public void close() {
            stopped = true;
            feeds.remove(id, this);
            synchronized (this) {
                notifyAll();
            }
            thread.interrupt();
        }
    }
}
