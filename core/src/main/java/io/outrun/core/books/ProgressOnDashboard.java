package io.outrun.core.books;

import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.jobrunr.jobs.Job;
import org.jobrunr.jobs.states.StateName;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A run's progress on its JobRunr job's page (issue 31): the percent as JobRunr's own progress
 * bar, a new message as a line of the job's dashboard log. Reports are kept here, the latest of
 * each job, and written every {@link #FLUSH} from one thread, so a run reporting four times a
 * second costs its job one save per flush, not four. A job saved meanwhile by its worker's books
 * (a version clash) or not processing yet keeps its report for the next flush; one that ended
 * drops it. {@link Books}, the one writer of JobRunr's jobs, writes what this class decides.
 */
public final class ProgressOnDashboard implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ProgressOnDashboard.class);
    static final long FLUSH_MS = 2_000;
    /** Dashboard log lines a job gets at most: the page is a summary, the poll has the latest. */
    static final int MAX_LINES = 50;

    private record Report(Integer percent, String message) {
    }

    private final Books books;
    private final Map<UUID, Report> pending = new ConcurrentHashMap<>();
    private final Map<UUID, String> lastMessage = new ConcurrentHashMap<>();
    private final Map<UUID, Integer> lines = new ConcurrentHashMap<>();
    private final Thread writer;
    private volatile boolean closed;

    public ProgressOnDashboard(Books books) {
        this.books = books;
        this.writer = new Thread(this::loop, "outrun-progress-dashboard");
        writer.setDaemon(true);
        writer.start();
    }

    /** The latest progress of the job {@code jobId}: shown at the next flush. */
    public void report(UUID jobId, Integer percent, String message) {
        if (jobId != null && !closed) {
            pending.put(jobId, new Report(percent, message));
        }
    }

    private void loop() {
        while (!closed) {
            try {
                TimeUnit.MILLISECONDS.sleep(FLUSH_MS);
            } catch (InterruptedException e) {
                return;
            }
            for (UUID jobId : pending.keySet()) {
                Report report = pending.remove(jobId);
                if (report == null) {
                    continue;
                }
                try {
                    if (!show(jobId, report)) {
                        pending.putIfAbsent(jobId, report); // not processing yet, or saved meanwhile: next flush
                    }
                } catch (RuntimeException e) {
                    LOG.debug("progress of JobRunr job {} not shown: {}", jobId, e.toString());
                }
            }
            if (lastMessage.size() > 10_000) {
                lastMessage.clear();
                lines.clear();
            }
        }
    }

    /** False when the report should wait for the next flush. */
    private boolean show(UUID jobId, Report report) {
        Optional<Job> found = books.find(jobId);
        if (found.isEmpty()) {
            return true; // gone (deleted): nothing to show it on
        }
        Job job = found.get();
        if (job.hasState(StateName.ENQUEUED) || job.hasState(StateName.SCHEDULED)) {
            return false; // its worker's books start it within a second
        }
        if (!job.hasState(StateName.PROCESSING)) {
            lastMessage.remove(jobId);
            lines.remove(jobId);
            return true;
        }
        String line = null;
        if (report.message() != null && !report.message().equals(lastMessage.get(jobId))
                && lines.merge(jobId, 1, Integer::sum) <= MAX_LINES) {
            line = report.message();
            lastMessage.put(jobId, report.message());
        }
        return books.showProgress(job, report.percent(), line);
    }

    @Override
    public void close() {
        closed = true;
        writer.interrupt();
    }
}
