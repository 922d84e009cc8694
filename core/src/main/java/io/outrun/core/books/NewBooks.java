package io.outrun.core.books;

import io.outrun.core.execution.Execution;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The books of new executions, written off the submit's path (issue 42): a submit hands its
 * stored row here and is answered; one thread writes what came in every {@link #EVERY}, all
 * of it in one JobRunr save ({@link Books#enqueueAll}, one transaction), so a burst of submits
 * pays one write of its books, not a transaction each. The dashboard shows a new execution
 * within that time.
 *
 * <p>Nothing is lost by writing later: the row is the execution and is committed before it comes
 * here; a book that was never written (this process died first) is written by the node that
 * claims the row ({@link JobBooks}, after its grace). A book cancelled before it was written
 * ({@link #retire}) is written and then retired, so the dashboard shows it deleted with its
 * reason, as it would have been had it been written first.
 */
public final class NewBooks implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(NewBooks.class);
    /**
     * How often the books are written: short enough that the node that claims a run finds its
     * book at its own first write ({@link JobBooks#FLUSH}, a second) almost always, long enough
     * that a burst shares one transaction.
     */
    static final Duration EVERY = Duration.ofMillis(250);
    /** A burst this big is written at once, not at the next tick: one save stays short. */
    static final int AT_MOST = 1_000;

    private final Books books;
    private final Object lock = new Object();
    /** By JobRunr job id, in the order they came. Guarded by {@link #lock}. */
    private LinkedHashMap<UUID, Execution> pending = new LinkedHashMap<>();
    /** The ones being written now. Guarded by {@link #lock}. */
    private Map<UUID, Execution> writing = Map.of();
    /** Jobs cancelled before they were written: retired right after. Guarded by {@link #lock}. */
    private final Map<UUID, String> retireAfter = new HashMap<>();
    private Thread writer;
    private boolean closed;

    public NewBooks(Books books) {
        this.books = books;
    }

    /** A new execution's row is committed: its book is written within {@link #EVERY}. */
    public void add(Execution e) {
        synchronized (lock) {
            if (!closed) {
                pending.put(e.jobId(), e);
                startWriter();
                if (pending.size() >= AT_MOST) {
                    lock.notifyAll();
                }
                return;
            }
        }
        write(List.of(e)); // after close (its process is stopping): at once, on the caller's thread
    }

    /**
     * Retires the job {@code jobId} (its execution was cancelled while queued): after its write
     * when that is still to come, at once otherwise.
     */
    public void retire(UUID jobId, String reason) {
        synchronized (lock) {
            if (pending.containsKey(jobId) || writing.containsKey(jobId)) {
                retireAfter.put(jobId, reason);
                return;
            }
        }
        books.retire(jobId, reason);
    }

    private void startWriter() {
        if (writer == null) {
            writer = new Thread(this::writeLoop, "outrun-new-books");
            writer.setDaemon(true);
            writer.start();
        }
    }

    private void writeLoop() {
        while (true) {
            List<Execution> batch;
            synchronized (lock) {
                long until = System.nanoTime() + EVERY.toNanos();
                while (!closed && pending.size() < AT_MOST) {
                    long left = until - System.nanoTime();
                    if (left <= 0) {
                        break;
                    }
                    try {
                        TimeUnit.NANOSECONDS.timedWait(lock, left);
                    } catch (InterruptedException e) {
                        break;
                    }
                }
                if (pending.isEmpty()) {
                    if (closed) {
                        return;
                    }
                    continue;
                }
                writing = pending;
                pending = new LinkedHashMap<>();
                batch = new ArrayList<>(writing.values());
            }
            write(batch);
        }
    }

    /** Writes {@code batch}'s books, then retires those cancelled meanwhile. */
    private void write(List<Execution> batch) {
        try {
            books.enqueueAll(batch);
        } catch (RuntimeException e) {
            // The rows are committed: their claims write their books (JobBooks), none is lost.
            LOG.warn("could not write the JobRunr books of {} new executions ({}); the nodes that claim them write them",
                    batch.size(), e.toString());
        }
        Map<UUID, String> retire;
        synchronized (lock) {
            writing = Map.of();
            retire = new HashMap<>(retireAfter);
            retireAfter.clear();
        }
        retire.forEach(books::retire);
    }

    /** Books waiting to be written (tests). */
    public int pending() {
        synchronized (lock) {
            return pending.size() + writing.size();
        }
    }

    /** Writes what is pending, then stops; later books are written on their submit's thread. */
    @Override
    public void close() {
        Thread w;
        synchronized (lock) {
            closed = true;
            lock.notifyAll();
            w = writer;
        }
        if (w != null) {
            try {
                w.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
