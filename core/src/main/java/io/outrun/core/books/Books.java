package io.outrun.core.books;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.JobIds;
import io.outrun.core.notify.Notifier;
import io.outrun.core.store.Channels;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jobrunr.jobs.Job;
import org.jobrunr.jobs.context.JobDashboardLogger;
import org.jobrunr.jobs.details.CachingJobDetailsGenerator;
import org.jobrunr.jobs.states.StateName;
import org.jobrunr.scheduling.JobBuilder;
import org.jobrunr.scheduling.JobScheduler;
import org.jobrunr.storage.ConcurrentJobModificationException;
import org.jobrunr.storage.JobNotFoundException;
import org.jobrunr.storage.StorageProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import static org.jobrunr.scheduling.JobBuilder.aJob;

/**
 * Hands executions to the fleet as JobRunr jobs that carry only the execution id.
 *
 * <p>The job is Outrun's book of the execution for the dashboard, not its dispatch: worker nodes
 * claim queued rows themselves and JobRunr's servers never pick these jobs up. The
 * {@code executions} row is always committed first; the job is enqueued after, with the UUID of
 * the row's current dispatch, so a repeat is a no-op; a crash in between leaves a row without a
 * job, which the node that claims it writes. JobRunr's retries are off: attempts are Outrun's.
 */
public final class Books {

    private static final Logger LOG = LoggerFactory.getLogger(Books.class);
    private static final int LABEL_MAX = 45;

    private final JobScheduler scheduler;
    private final StorageProvider storage;
    private final Notifier notifier;
    /** Work handed to JobRunr since the last wake-up was sent: how many nodes the next one wakes. */
    private final AtomicInteger wakesWanted = new AtomicInteger();
    private final ExecutorService waker = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "outrun-waker");
        t.setDaemon(true);
        return t;
    });

    public Books(StorageProvider storage, Notifier notifier) {
        this.storage = storage;
        // JobRunr's own default (JobRunr.configure()): analyses the job lambda's bytecode once per call
        // site, not on every enqueue as the bare JobScheduler(storage) does (a quarter of a submit's CPU).
        this.scheduler = new JobScheduler(storage, new CachingJobDetailsGenerator(), List.of());
        this.notifier = notifier;
    }

    public JobScheduler scheduler() {
        return scheduler;
    }

    /** Enqueues the job of a queued execution's current dispatch (its book; it wakes nobody). */
    public void enqueue(UUID executionId, int bookSeq, String owner, String command) {
        enqueue(executionId, bookSeq, owner, command, 1);
    }

    /**
     * As {@link #enqueue(UUID, int, String, String)}, for the given attempt (1 for a first run),
     * which the job's name on the dashboard carries from the second on.
     */
    public void enqueue(UUID executionId, int bookSeq, String owner, String command, int attempt) {
        scheduler.create(job(executionId, bookSeq, owner, command, attempt));
    }

    /**
     * The job of a first dispatch that starts no sooner than {@code startsAt} (a delayed start):
     * SCHEDULED on the dashboard until then, when JobRunr enqueues it; the claim that runs it is
     * Outrun's, by the row's own time. Null or past: enqueued now.
     */
    public void enqueue(UUID executionId, int bookSeq, String owner, String command, java.time.Instant startsAt) {
        enqueue(executionId, bookSeq, owner, command, 1, startsAt);
    }

    /** As {@link #enqueue(UUID, int, String, String, java.time.Instant)}, for the given attempt. */
    public void enqueue(UUID executionId, int bookSeq, String owner, String command, int attempt,
                        java.time.Instant startsAt) {
        JobBuilder job = job(executionId, bookSeq, owner, command, attempt);
        if (startsAt != null && startsAt.isAfter(java.time.Instant.now())) {
            job = job.scheduleAt(startsAt);
        }
        scheduler.create(job);
    }

    private static JobBuilder job(UUID executionId, int bookSeq, String owner, String command, int attempt) {
        return aJob()
                .withId(JobIds.of(executionId, bookSeq))
                .withName(jobName(owner, command, attempt))
                .withLabels(label("owner:" + owner))
                .withAmountOfRetries(0)
                .<ExecutionRunner>withJobLambda(runner -> runner.run(executionId));
    }

    /**
     * Tells the fleet there is one more piece of new work: one node with a free slot is woken on
     * its own channel (see {@link Notifier#wakeNodes}), never the whole fleet, which would
     * send every idle node into a claim for one execution. The NOTIFY is sent by one
     * background thread, and wake-ups that arrive while one is pending share its statement (it
     * wakes as many nodes as there were wake-ups): under load a submit pays no round trip for it.
     */
    public void wake() {
        if (wakesWanted.getAndIncrement() == 0) {
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

    /**
     * Removes a job that no longer carries anything (its execution was cancelled). A job that
     * already ended (deleted by an admin, failed as lost) is left as it is.
     */
    public void retire(UUID jobId, String reason) {
        try {
            Job job = storage.getJobById(jobId);
            if (job.hasState(StateName.DELETED) || job.hasState(StateName.SUCCEEDED) || job.hasState(StateName.FAILED)) {
                return;
            }
            job.delete(reason);
            storage.save(job);
        } catch (JobNotFoundException e) {
            // Already gone: nothing to retire.
        } catch (ConcurrentJobModificationException e) {
            LOG.debug("JobRunr job {} changed while being retired; left as it is now", jobId);
        } catch (RuntimeException e) {
            LOG.warn("could not retire JobRunr job {}: {}", jobId, e.toString());
        }
    }

    /** True when the job exists and is DELETED (an admin's delete on the dashboard, or ours). */
    public boolean isDeleted(UUID jobId) {
        try {
            return storage.getJobById(jobId).hasState(StateName.DELETED);
        } catch (JobNotFoundException e) {
            return false;
        }
    }

    /**
     * Ends the job of an attempt that lost its lease {@code FAILED} with {@code why}, so the
     * dashboard shows the dead attempt as failed, not processing on a dead server. A job that
     * already ended (its node wrote the end after all, or an admin deleted it) is left as it is.
     * The node that claimed the attempt may still hold the job: its next save of it then fails
     * JobRunr's version check and it leaves this end standing.
     *
     * @return true when the job was failed here
     */
    public boolean failLost(UUID jobId, String why) {
        for (int tries = 0; tries < 3; tries++) {
            try {
                Job job = storage.getJobById(jobId);
                if (!job.hasState(StateName.PROCESSING) && !job.hasState(StateName.ENQUEUED)) {
                    return false;
                }
                job.failed("Outrun: " + why, new JobFailure(why));
                storage.save(job);
                return true;
            } catch (JobNotFoundException e) {
                return false;
            } catch (ConcurrentJobModificationException e) {
                LOG.debug("JobRunr job {} changed while being failed as lost; reading it again", jobId);
            } catch (RuntimeException e) {
                LOG.warn("could not mark JobRunr job {} failed: {}", jobId, e.toString());
                return false;
            }
        }
        return false;
    }

    /**
     * Ends a job its node left ENQUEUED or PROCESSING when it stopped right after its execution
     * ended: as the execution ended ({@code SUCCEEDED}, {@code DELETED} for a cancel, else
     * {@code FAILED} with {@code why}), with {@code summary} on its page. A job someone wrote
     * meanwhile (its node after all, an admin) is left as it is.
     *
     * @return true when the job was ended here
     */
    public boolean closeLeftOpen(UUID jobId, ExecutionStatus ended, String why, List<String> summary) {
        return end(jobId, job -> (job.hasState(StateName.PROCESSING) || job.hasState(StateName.ENQUEUED))
                // one that ended once is an admin's Requeue, which the sweep's dashboard watch ends again
                && job.getJobStates().stream().noneMatch(s -> s.getName() == StateName.SUCCEEDED
                        || s.getName() == StateName.FAILED || s.getName() == StateName.DELETED), ended, why, summary);
    }

    /**
     * Ends a job that {@code open} says is still open as {@code ended} (SUCCEEDED; DELETED for a
     * cancel; else FAILED with {@code why}), with {@code summary} on its page, in one save under
     * JobRunr's version check: a job someone wrote meanwhile keeps their write.
     *
     * @return true when the job was ended here
     */
    private boolean end(UUID jobId, java.util.function.Predicate<Job> open, ExecutionStatus ended, String why,
                        List<String> summary) {
        try {
            Job job = storage.getJobById(jobId);
            if (!open.test(job)) {
                return false;
            }
            JobDashboardLogger page = new JobDashboardLogger(job);
            summary.forEach(page::info);
            switch (ended) {
                case SUCCEEDED -> job.succeeded();
                case CANCELLED -> job.delete(why);
                default -> job.failed(why, new JobFailure(why));
            }
            storage.save(job);
            return true;
        } catch (JobNotFoundException | ConcurrentJobModificationException e) {
            return false;
        } catch (RuntimeException e) {
            LOG.warn("could not end JobRunr job {}: {}", jobId, e.toString());
            return false;
        }
    }

    /**
     * Ends a schedule's firing job (issue 28) once Outrun handled it: SUCCEEDED ({@code ran}) or
     * DELETED, with {@code what} on its page. Any ENQUEUED firing is ended, an admin's Requeue of
     * one too (it runs nothing again: its execution is keyed by the job's id).
     */
    public void endFiring(UUID jobId, boolean ran, String what) {
        end(jobId, job -> job.hasState(StateName.ENQUEUED), ran ? ExecutionStatus.SUCCEEDED : ExecutionStatus.CANCELLED,
                what, List.of(what));
    }

    public StorageProvider storage() {
        return storage;
    }

    /** Sends what wake-up is pending, then stops the waker thread. */
    public void close() {
        waker.shutdown();
        try {
            waker.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** What an admin sees on the dashboard: the owner, the start of the command, and the attempt from the second on. */
    static String jobName(String owner, String command, int attempt) {
        String oneLine = command.strip().replaceAll("\\s+", " ");
        String start = oneLine.length() > 80 ? oneLine.substring(0, 79) + "…" : oneLine;
        return "[" + owner + "] " + start + (attempt > 1 ? " · attempt " + attempt : "");
    }

    private static String label(String text) {
        return text.length() <= LABEL_MAX ? text : text.substring(0, LABEL_MAX);
    }
}
