package io.outrun.core.books;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.JobIds;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jobrunr.jobs.Job;
import org.jobrunr.jobs.context.JobDashboardLogger;
import org.jobrunr.jobs.context.JobDashboardProgressBar;
import org.jobrunr.jobs.details.CachingJobDetailsGenerator;
import org.jobrunr.jobs.lambdas.IocJobLambda;
import org.jobrunr.jobs.states.StateName;
import org.jobrunr.scheduling.Schedule;
import org.jobrunr.scheduling.ScheduleExpressionType;
import org.jobrunr.scheduling.interval.Interval;
import org.jobrunr.scheduling.JobBuilder;
import org.jobrunr.scheduling.JobScheduler;
import org.jobrunr.scheduling.RecurringJobBuilder;
import org.jobrunr.scheduling.ScheduleException;
import org.jobrunr.scheduling.cron.InvalidCronExpressionException;
import org.jobrunr.server.BackgroundJobServer;
import org.jobrunr.storage.ConcurrentJobModificationException;
import org.jobrunr.storage.JobNotFoundException;
import org.jobrunr.storage.StorageProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import static org.jobrunr.scheduling.JobBuilder.aJob;

/**
 * The one writer of JobRunr's jobs: every job Outrun writes (an execution's book, a schedule's
 * recurring job and its firings) is created, moved to another state, given dashboard lines or
 * saved here, and nowhere else ({@code OneBooksWriterTest}). The node's books ({@link JobBooks})
 * and the progress on the dashboard ({@link ProgressOnDashboard}) decide when; this class writes.
 *
 * <p>The job is Outrun's book of the execution for the dashboard, not its dispatch: worker nodes
 * claim queued rows themselves and JobRunr's servers never pick these jobs up. The
 * {@code executions} row is always committed first; the job is enqueued after, with the UUID of
 * the row's current book (its book number), so a repeat is a no-op; a crash in between leaves a row without a
 * job, which the node that claims it writes. JobRunr's retries are off: attempts are Outrun's.
 * Every change of a stored job is one save under JobRunr's version check: a job someone else
 * wrote meanwhile (an admin, another node, the sweep) keeps their write.
 */
public final class Books {

    private static final Logger LOG = LoggerFactory.getLogger(Books.class);
    private static final int LABEL_MAX = 45;

    /** Said by a requeued job of an ended execution, which ends again as it did. */
    static final String NEVER_AGAIN = " This job was requeued on the dashboard, but an execution's end never changes:"
            + " submit the command anew to run it again.";

    private final JobScheduler scheduler;
    private final StorageProvider storage;
    private final CachingJobDetailsGenerator details = new CachingJobDetailsGenerator();

    public Books(StorageProvider storage) {
        this.storage = storage;
        // JobRunr's own default (JobRunr.configure()): analyses the job lambda's bytecode once per call
        // site, not on every enqueue as the bare JobScheduler(storage) does (a quarter of a submit's CPU).
        this.scheduler = new JobScheduler(storage, details, List.of());
    }

    // ---- An execution's book: enqueued, retired, ended by the sweep ----
    /** Enqueues a queued execution's current book, its JobRunr job (it wakes nobody: that is {@code Wakes}). */
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
     * As {@link #enqueue(UUID, int, String, String, int)}, for a book that starts no sooner than
     * {@code startsAt} (a delayed start, a retry's backoff): SCHEDULED on the dashboard until then,
     * when JobRunr enqueues it; the claim that runs it is Outrun's, by the row's own time. Null or
     * past: enqueued now.
     */
    public void enqueue(UUID executionId, int bookSeq, String owner, String command, int attempt, Instant startsAt) {
        scheduler.create(job(executionId, bookSeq, owner, command, attempt, startsAt));
    }

    /**
     * The books of new executions (their first dispatch), in one JobRunr save: one transaction
     * and one multi-row insert for all ({@link NewBooks} decides when). When one of them exists
     * already (the node that claimed it wrote it after its grace), they are written one by one,
     * where JobRunr skips the one that exists.
     */
    public void enqueueAll(List<Execution> executions) {
        try {
            scheduler.create(executions.stream().map(Books::firstJob));
        } catch (RuntimeException e) {
            LOG.debug("writing {} new books in one save failed ({}); one by one", executions.size(), e.toString());
            executions.forEach(x -> scheduler.create(firstJob(x))); // a failure here: the database is away
        }
    }

    /** A new execution's first book: SCHEDULED until a delayed start, ENQUEUED otherwise. */
    private static JobBuilder firstJob(Execution e) {
        return job(e.id(), e.bookSeq(), e.owner(), e.command(), 1, e.startsAt() == null ? null : e.enqueuedAt());
    }

    private static JobBuilder job(UUID executionId, int bookSeq, String owner, String command, int attempt,
                                  Instant startsAt) {
        JobBuilder job = job(executionId, bookSeq, owner, command, attempt);
        return startsAt != null && startsAt.isAfter(Instant.now()) ? job.scheduleAt(startsAt) : job;
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
     * ended, as {@code end} says (see {@link BookEntry#as}). A job someone wrote meanwhile (its node
     * after all, an admin) is left as it is.
     *
     * @return true when the job was ended here
     */
    public boolean closeLeftOpen(UUID jobId, BookEntry end) {
        return end(jobId, job -> (job.hasState(StateName.PROCESSING) || job.hasState(StateName.ENQUEUED))
                // one that ended once is an admin's Requeue, which the sweep's dashboard watch ends again
                && !endedOnce(job), end);
    }

    /**
     * An admin requeued the job {@code jobId} of an execution that ended (or of an attempt the
     * execution went on without): it ends again as its execution did (found by
     * {@code executions}), saying why, and nothing runs.
     *
     * @return true when the job was ended again here
     */
    public boolean endRequeued(UUID jobId, Function<UUID, Optional<Execution>> executions) {
        try {
            Job job = storage.getJobById(jobId);
            // Requeued means enqueued again after an end; a job that never ended is one whose
            // node's books are behind (they write within a second): theirs to end.
            if (!job.hasState(StateName.ENQUEUED) || !endedOnce(job)) {
                return false;
            }
            Object carried = job.getJobDetails().getJobParameters().isEmpty() ? null
                    : job.getJobDetails().getJobParameters().get(0).getObject();
            Optional<Execution> found = carried instanceof UUID id ? executions.apply(id) : Optional.empty();
            if (found.isEmpty()) {
                end(job, BookEntry.deleted("the execution this job carried no longer exists (pruned)", List::of));
            } else if (found.get().status().isTerminal() && found.get().jobId().equals(jobId)) {
                Execution e = found.get();
                end(job, BookEntry.as(e.status(), BookEntry.why(e.status(), e.errorCode(), e.errorMessage()) + NEVER_AGAIN,
                        List::of));
            } else if (found.get().status() == ExecutionStatus.QUEUED && found.get().jobId().equals(jobId)) {
                return false; // its own queued job (an admin's requeue of a job deleted a moment ago)
            } else {
                end(job, BookEntry.deleted("superseded: execution " + found.get().id() + " is "
                        + found.get().status().wire() + " under JobRunr job " + found.get().jobId()
                        + "; this job carries nothing." + NEVER_AGAIN, List::of));
            }
            storage.save(job);
            LOG.warn("JobRunr job {} was requeued on the dashboard; it ended again as {}", jobId, job.getState());
            return true;
        } catch (JobNotFoundException | ConcurrentJobModificationException e) {
            return false; // gone or changed again: the next sweep looks at it anew
        } catch (RuntimeException e) {
            LOG.warn("could not end requeued JobRunr job {} again: {}", jobId, e.toString());
            return false;
        }
    }

    private static boolean endedOnce(Job job) {
        return job.getJobStates().stream().anyMatch(s -> s.getName() == StateName.SUCCEEDED
                || s.getName() == StateName.FAILED || s.getName() == StateName.DELETED);
    }

    /**
     * Ends a job that {@code open} says is still open as {@code end} says, with its summary on its
     * page, in one save under JobRunr's version check: a job someone wrote meanwhile keeps their
     * write.
     *
     * @return true when the job was ended here
     */
    private boolean end(UUID jobId, Predicate<Job> open, BookEntry end) {
        try {
            Job job = storage.getJobById(jobId);
            if (!open.test(job)) {
                return false;
            }
            end(job, end);
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
     * The one end of a job (not saved yet): the summary on its page, then {@code SUCCEEDED},
     * {@code FAILED} with the one line that says why (no stack trace) or {@code DELETED} with it.
     */
    static void end(Job job, BookEntry end) {
        summaryOn(job, end);
        switch (end.state()) {
            case SUCCEEDED -> job.succeeded();
            case FAILED -> job.failed(end.why(), new JobFailure(end.why()));
            default -> job.delete(end.why());
        }
    }

    private static void summaryOn(Job job, BookEntry end) {
        List<String> lines;
        try {
            lines = end.summary().get();
        } catch (RuntimeException e) {
            lines = List.of(end.why(), "(no summary: " + e.getMessage() + ")");
        }
        if (!lines.isEmpty()) { // a logger made is an (empty) log on the job's page
            lines.forEach(new JobDashboardLogger(job)::info);
        }
    }

    // ---- The node's side (JobBooks) and progress (ProgressOnDashboard) ----
    /** The stored job, if there is one; reads write nothing. */
    Optional<Job> find(UUID jobId) {
        try {
            return Optional.of(storage.getJobById(jobId));
        } catch (JobNotFoundException e) {
            return Optional.empty();
        }
    }

    /** A claimed job that still waits (ENQUEUED or SCHEDULED) shows PROCESSING on {@code server}; true when it changed. */
    static boolean startProcessing(Job job, BackgroundJobServer server) {
        if (!job.hasState(StateName.ENQUEUED) && !job.hasState(StateName.SCHEDULED)) {
            return false; // ended elsewhere (an admin, the sweep): its end stands
        }
        if (job.hasState(StateName.SCHEDULED)) {
            job.enqueue();
        }
        job.startProcessingOn(server);
        return true;
    }

    /**
     * The node's end of its attempt's job: a PROCESSING job ends as {@code end} says; one that
     * someone else ended (an admin's delete) keeps their end and gets the summary when DELETED.
     * True when the job changed.
     */
    static boolean endOnNode(Job job, BookEntry end) {
        if (job.hasState(StateName.PROCESSING)) {
            end(job, end);
            return true;
        }
        if (job.hasState(StateName.DELETED)) {
            summaryOn(job, end);
            return true;
        }
        return false;
    }

    /** A running job is written again, which keeps JobRunr's orphan check from failing it; true when it changed. */
    static boolean refresh(Job job) {
        if (!job.hasState(StateName.PROCESSING)) {
            return false;
        }
        job.updateProcessing();
        return true;
    }

    /** Saves the jobs in one transaction; returns those that were not saved (someone else changed them, or the save failed). */
    List<Job> save(List<Job> dirty) {
        if (dirty.isEmpty()) {
            return List.of();
        }
        try {
            storage.save(dirty);
            return List.of();
        } catch (ConcurrentJobModificationException e) {
            // Changed by someone else since read (an admin, the sweep): read again at the next
            // write, which keeps their end or writes ours on top of what they wrote.
            List<Job> failed = e.getConcurrentUpdatedJobs();
            LOG.debug("{} JobRunr jobs changed meanwhile; read again", failed.size());
            return failed;
        } catch (RuntimeException e) {
            LOG.warn("could not save {} JobRunr jobs ({}); trying again", dirty.size(), e.toString());
            return dirty;
        }
    }

    /**
     * A run's progress on its PROCESSING job's page: {@code percent} on JobRunr's progress bar,
     * {@code line} (when not null) a line of its dashboard log. False when the job was saved
     * meanwhile (a version clash): shown at a later flush.
     */
    boolean showProgress(Job job, Integer percent, String line) {
        if (percent != null) {
            new JobDashboardProgressBar(job, 100L).setProgress(percent);
        }
        if (line != null) {
            new JobDashboardLogger(job).info(line);
        }
        try {
            storage.save(job);
            return true;
        } catch (ConcurrentJobModificationException e) {
            return false;
        }
    }

    // ---- Schedules (issue 28): their recurring jobs and their firings ----
    /**
     * The recurring job {@code id} that fires {@code firing} on {@code cron} (or, when null, every
     * {@code everyMs}) in {@code zone}, named and labelled so (labels under 45 characters).
     *
     * @throws IllegalArgumentException a cron expression, interval or zone JobRunr cannot use (with why)
     */
    public <S> RecurringBook recurring(String id, String name, List<String> labels, ZoneId zone, String cron,
                                   Long everyMs, IocJobLambda<S> firing) {
        RecurringJobBuilder job = RecurringJobBuilder.aRecurringJob().withId(id).withName(name).withLabels(labels)
                .withAmountOfRetries(0)
                .withZoneId(zone)
                .withJobLambda(firing);
        try {
            return new RecurringBook(cron != null ? job.withCron(cron) : job.withInterval(Duration.ofMillis(everyMs)));
        } catch (RuntimeException e) {
            throw refused(e);
        }
    }

    /**
     * Writes (or writes again: JobRunr's save is an upsert) a schedule's recurring job.
     *
     * @throws IllegalArgumentException JobRunr refused it (its cron check), with why
     */
    public void schedule(RecurringBook recurring) {
        try {
            scheduler.createRecurrently(recurring.job());
        } catch (RuntimeException e) {
            throw refused(e);
        }
    }

    /** Deletes a schedule's recurring job: it fires no more. */
    public void unschedule(String id) {
        scheduler.deleteRecurringJob(id);
    }

    /** JobRunr's own refusals of a schedule (its cron parser, its interval and label checks) as what they are. */
    private static RuntimeException refused(RuntimeException e) {
        if (e instanceof ScheduleException || e instanceof InvalidCronExpressionException
                || e instanceof IllegalArgumentException) {
            return new IllegalArgumentException(e.getMessage() == null ? "JobRunr cannot use it" : e.getMessage(), e);
        }
        return e;
    }

    /**
     * A schedule's firing as the dashboard shows it (issue 45): a job of the schedule's recurring
     * job ({@code recurringJobId}), ended at once, SUCCEEDED ({@code ran}) or DELETED, with
     * {@code what} on its page. {@code firing} is the recurring job's own lambda.
     */
    public record FiringBook(String recurringJobId, String name, List<String> labels, Instant due, boolean ran,
                             String what, IocJobLambda<?> firing) {
        /** The same firing always has the same job: a pass made again after a failure writes none twice. */
        public UUID jobId() {
            return UUID.nameUUIDFromBytes((recurringJobId + "@" + due.toEpochMilli()).getBytes(StandardCharsets.UTF_8));
        }
    }

    /**
     * Writes the books of a pass's firings in one JobRunr save. A firing whose job exists already
     * (a pass made again after it failed) keeps the one written first.
     */
    public void firings(List<FiringBook> firings) {
        if (firings.isEmpty()) {
            return;
        }
        List<Job> jobs = firings.stream().map(this::firingJob).toList();
        try {
            storage.save(jobs);
        } catch (RuntimeException e) {
            LOG.debug("writing {} firings' books in one save failed ({}); one by one", jobs.size(), e.toString());
            for (Job job : jobs) {
                try {
                    storage.save(job);
                } catch (RuntimeException one) {
                    if (find(job.getId()).isEmpty()) {
                        throw one; // not a repeat: the database is away
                    }
                }
            }
        }
    }

    private Job firingJob(FiringBook f) {
        Job job = new Job(f.jobId(), details.toJobDetails(f.firing()));
        job.setJobName(f.name());
        job.setLabels(f.labels());
        job.setAmountOfRetries(0);
        job.setRecurringJobId(f.recurringJobId());
        end(job, f.ran() ? BookEntry.succeeded(() -> List.of(f.what())) : BookEntry.deleted(f.what(), () -> List.of(f.what())));
        return job;
    }

    /**
     * A firing written as run whose execution was then refused (its owner's queue was full):
     * DELETED, saying why. Best effort: its schedule's counts say it too.
     */
    public void firingRefused(UUID jobId, String why) {
        try {
            Optional<Job> job = find(jobId);
            if (job.isPresent() && !job.get().hasState(StateName.DELETED)) {
                job.get().delete(why);
                storage.save(job.get());
            }
        } catch (RuntimeException e) {
            LOG.debug("could not mark firing {} refused ({})", jobId, e.toString());
        }
    }

    /**
     * Ends a schedule's firing job (issue 28) once Outrun handled it: SUCCEEDED ({@code ran}) or
     * DELETED, with {@code what} on its page. Any ENQUEUED firing is ended, an admin's Requeue of
     * one too (it runs nothing again: its execution is keyed by the job's id).
     */
    public void endFiring(UUID jobId, boolean ran, String what) {
        end(jobId, job -> job.hasState(StateName.ENQUEUED),
                ran ? BookEntry.succeeded(() -> List.of(what)) : BookEntry.deleted(what, () -> List.of(what)));
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

    /**
     * When a schedule fires (issue 45): JobRunr's own arithmetic, so that the dashboard's "next run"
     * of its recurring job and Outrun's clock agree. A cron expression (5 fields, or 6 with seconds
     * first) in the schedule's zone, or an interval counted from the schedule's creation. Here
     * because JobRunr's scheduling API is the books' alone (OneBooksWriterTest).
     */
    public static final class ScheduleTime {

        private final Schedule schedule;
        private final Instant anchor;
        private final ZoneId zone;

        private ScheduleTime(Schedule schedule, Instant anchor, ZoneId zone) {
            this.schedule = schedule;
            this.anchor = anchor;
            this.zone = zone;
        }

        /**
         * Parsed expressions, shared: a fleet's schedules use few distinct ones, and the clock reckons
         * every due schedule at every pass. Bounded: past it, parsed again each time.
         */
        private static final Map<String, Schedule> PARSED = new ConcurrentHashMap<>();
        private static final int MAX_PARSED = 10_000;

        /** {@code cron} or, when null, every {@code everyMs} from {@code createdAt}. */
        public static ScheduleTime of(String cron, Long everyMs, Instant createdAt, String zone) {
            String expression = cron != null ? cron : "every " + everyMs;
            Schedule s = PARSED.get(expression);
            if (s == null) {
                s = cron != null ? ScheduleExpressionType.createScheduleFromString(cron) : new Interval(Duration.ofMillis(everyMs));
                if (PARSED.size() < MAX_PARSED) {
                    PARSED.put(expression, s);
                }
            }
            return new ScheduleTime(s, createdAt, ZoneId.of(zone));
        }

        /** The first firing strictly after {@code after}. */
        public Instant nextAfter(Instant after) {
            Instant next = schedule.next(anchor, after, zone);
            if (!next.isAfter(after)) {
                // JobRunr answers strictly later; should a version not, a clock must still move on.
                next = schedule.next(anchor, after.plusMillis(1), zone);
                if (!next.isAfter(after)) {
                    throw new IllegalStateException(schedule.getExpression() + " gives no firing after " + after);
                }
            }
            return next;
        }
    }
}
