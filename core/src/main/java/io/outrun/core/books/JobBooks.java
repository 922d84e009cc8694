package io.outrun.core.books;

import io.outrun.core.execution.Execution;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.jobrunr.jobs.Job;
import org.jobrunr.server.BackgroundJobServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * JobRunr keeps the books: this node records, on each claimed execution's JobRunr job, that it
 * runs here (PROCESSING on this node's JobRunr server) and how its attempt ended, off the
 * dispatch path. One thread writes what runs and ends have told it, every {@link #FLUSH}, all in
 * one JobRunr save (one transaction); an attempt that ends before its start was written gets
 * both states in one write. Only JobRunr's public API is used: {@code getJobById}, the
 * {@code Job} state methods, {@code save} with its version check; what is written is written by
 * {@link Books}, the one writer of JobRunr's jobs: this class keeps what is due and when.
 *
 * <p>A job changed by someone else meanwhile (an admin deleted it, the sweep failed it as lost)
 * fails the version check: its stored end stands, and the summary is added to it when it ended
 * DELETED. A job that does not exist yet (the API commits the row before it enqueues the job)
 * is looked for again; after {@link #MISSING_GRACE} (the API died in between) this node writes it.
 * Running jobs are saved again every {@link #REFRESH}, which keeps JobRunr's orphan check (a
 * PROCESSING job not updated for its server timeout is failed) from taking them for dead.
 */
public final class JobBooks implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(JobBooks.class);
    /**
     * How often the books are written: a second, so that one transaction carries the jobs of many
     * runs (at 200 ms a 4-node fleet at 20 executions/s paid a BEGIN and COMMIT for almost every
     * job) and a short run's start and end go in one update.
     */
    static final Duration FLUSH = Duration.ofSeconds(1);
    static final Duration MISSING_GRACE = Duration.ofSeconds(5);

    private final Books books;
    private final Supplier<BackgroundJobServer> server;
    private final Duration refresh;
    /** By JobRunr job id: every job this node keeps the books of now. */
    private final Map<UUID, Entry> entries = new ConcurrentHashMap<>();
    private final Thread writer;
    private volatile boolean closed;
    /** Whether the last write failed (the database is away): said once, not at every write. */
    private boolean failing;

    /**
     * @param refresh how often a running job is saved again: below JobRunr's server timeout
     *                (poll interval × its multiplicand), after which its orphan check fails it
     */
    public JobBooks(Books books, Supplier<BackgroundJobServer> server, Duration refresh) {
        this.books = books;
        this.server = server;
        this.refresh = refresh;
        this.writer = new Thread(this::writeLoop, "outrun-books");
        writer.setDaemon(true);
        writer.start();
    }

    /** One job's books on this node. Guarded by itself. */
    private static final class Entry {
        final Execution claimed;
        final long since = System.nanoTime();
        Job job;
        boolean started;
        BookEntry end;
        long savedAt;
        boolean created;

        Entry(Execution claimed) {
            this.claimed = claimed;
        }
    }

    /** This node claimed {@code e}: its job shows it PROCESSING here at the next write. */
    public void claimed(Execution e) {
        entries.put(e.jobId(), new Entry(e));
    }

    /** The attempt of the job {@code jobId} is over on this node; its job ends as {@code end}. */
    public void ended(UUID jobId, BookEntry end) {
        Entry entry = entries.get(jobId);
        if (entry == null) {
            LOG.debug("no books kept for JobRunr job {}; its end is not written", jobId);
            return;
        }
        synchronized (entry) {
            entry.end = end;
        }
    }

    /** The attempt will not be written anything (its lease was lost): its job is the sweep's. */
    public void forget(UUID jobId) {
        entries.remove(jobId);
    }

    private void writeLoop() {
        while (!closed) {
            try {
                TimeUnit.NANOSECONDS.sleep(FLUSH.toNanos());
            } catch (InterruptedException e) {
                if (closed) {
                    break;
                }
            }
            try {
                write();
                if (failing) {
                    LOG.info("JobRunr's books are written again");
                    failing = false;
                }
            } catch (RuntimeException e) {
                if (!failing) {
                    LOG.warn("could not write JobRunr's books ({}); trying again every {} ms", e.toString(),
                            FLUSH.toMillis());
                    failing = true;
                }
            }
        }
        try {
            write(); // what ended before the stop
        } catch (RuntimeException e) {
            LOG.warn("could not write JobRunr's last books at stop: {}", e.toString());
        }
    }

    /** One write of everything due: starts, ends, refreshes. */
    void write() {
        BackgroundJobServer jobServer = server.get();
        if (jobServer == null || entries.isEmpty()) {
            return;
        }
        List<Job> dirty = new ArrayList<>();
        Set<UUID> ending = new HashSet<>();
        long now = System.nanoTime();
        RuntimeException failed = null;
        for (Entry entry : entries.values()) {
            synchronized (entry) {
                UUID id = entry.claimed.jobId();
                try {
                    if (entry.job == null && !read(entry)) {
                        continue;
                    }
                } catch (RuntimeException e) {
                    failed = e; // the database is away: what was read is still written below
                    continue;
                }
                Job job = entry.job;
                boolean changed = false;
                if (!entry.started) {
                    changed = Books.startProcessing(job, jobServer);
                    entry.started = true; // or it ended elsewhere (an admin, the sweep): its end stands
                }
                if (entry.end != null) {
                    changed |= Books.endOnNode(job, entry.end);
                    ending.add(id);
                } else if (!changed && now - entry.savedAt > refresh.toNanos()) {
                    changed = Books.refresh(job);
                }
                if (changed) {
                    dirty.add(job);
                    entry.savedAt = now;
                }
            }
        }
        ending.removeAll(save(dirty));
        ending.forEach(entries::remove);
        if (failed != null) {
            throw failed;
        }
    }

    /** Reads the entry's job; false when it is not there (yet). */
    private boolean read(Entry entry) {
        UUID id = entry.claimed.jobId();
        Optional<Job> job = books.find(id);
        if (job.isPresent()) {
            entry.job = job.get();
            return true;
        }
        if (System.nanoTime() - entry.since > MISSING_GRACE.toNanos() && !entry.created) {
            // The API stored the row and died before it enqueued the job: written here.
            Execution c = entry.claimed;
            LOG.warn("execution {} has no JobRunr job {}; writing it", c.id(), id);
            books.enqueue(c.id(), c.bookSeq(), c.owner(), c.command(), c.attempt());
            entry.created = true;
        }
        return false;
    }

    /** Saves the jobs in one transaction; returns those someone else changed since they were read. */
    private Set<UUID> save(List<Job> dirty) {
        Set<UUID> ids = new HashSet<>();
        for (Job job : books.save(dirty)) {
            ids.add(job.getId());
            Entry entry = entries.get(job.getId());
            if (entry != null) {
                synchronized (entry) {
                    entry.job = null;     // what is stored is read again,
                    entry.started = false; // and started again if it still waits
                }
            }
        }
        return ids;
    }

    /** How many jobs this node keeps the books of now (tests). */
    public int size() {
        return entries.size();
    }

    /** Writes what is due one last time, then stops. */
    @Override
    public void close() {
        closed = true;
        writer.interrupt();
        try {
            writer.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
