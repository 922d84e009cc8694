package io.outrun.job;

import io.outrun.dispatch.Dispatcher;
import io.outrun.dispatch.LostAttemptPolicy;
import io.outrun.execution.Execution;
import io.outrun.execution.ExecutionStatus;
import io.outrun.execution.JobIds;
import io.outrun.redrive.RedriveSweep;
import io.outrun.sandbox.capture.Captured;
import io.outrun.store.Channels;
import io.outrun.store.OutputStore;
import io.outrun.store.Outcome;
import io.outrun.store.SubmissionStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.jobrunr.jobs.Job;
import org.jobrunr.jobs.context.JobContext;
import org.jobrunr.jobs.context.JobDashboardLogger;
import org.jobrunr.jobs.states.StateName;
import org.jobrunr.server.JobSteward;
import org.jobrunr.server.runner.ThreadLocalJobContext;
import org.jobrunr.storage.ConcurrentJobModificationException;
import org.jobrunr.storage.StorageProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes the JobRunr job of an execution end the way the execution did, so the dashboard tells an
 * admin the truth: {@code SUCCEEDED} when it succeeded; {@code FAILED} with its error code and
 * message when it failed, timed out or was killed for memory, or when this job's attempt lost its
 * lease; {@code DELETED}, with who cancelled, when it was cancelled, and when this job's attempt
 * was handed back or the job no longer carries the execution's current dispatch. The job's page
 * also gets a short summary (owner, attempt, node, exit code, duration, the last lines of output),
 * written once at the end with the job's own final save (JobRunr rewrites a running job's JSON
 * every poll, so anything written earlier would be rewritten for the whole run).
 *
 * <p>How JobRunr decides a job's end: a job method that returns ends SUCCEEDED; one that throws
 * ends FAILED with the exception ({@link ExecutionFailure}: one line, no stack trace). For
 * DELETED, the job deletes itself (its own in-memory job, the one JobRunr's steward and performer
 * hold, then saved) and throws an {@link InterruptedException}: JobRunr's performer then sees a
 * deleted job interrupted, its "deleted while processing" path, and writes nothing more.
 */
public final class JobOutcome {

    private static final Logger LOG = LoggerFactory.getLogger(JobOutcome.class);
    /** Last lines of each stream shown on the job's page, each cut to a width. */
    private static final int TAIL_LINES = 5;
    private static final int LINE_WIDTH = 200;
    private static final int TAIL_BYTES = 2048;

    /** Recorded as the execution's end when an admin deletes its running job on the dashboard. */
    public static final String ADMIN_CANCEL = "Cancelled by an admin from the dashboard (its JobRunr job was deleted);"
            + " the command was killed.";

    private final SubmissionStore store;
    private final Dispatcher dispatcher;
    private final StorageProvider storage;
    private final String node;
    private volatile JobSteward steward;

    public JobOutcome(SubmissionStore store, Dispatcher dispatcher, String node) {
        this.store = store;
        this.dispatcher = dispatcher;
        this.storage = dispatcher.storage();
        this.node = node;
    }

    /** The node's JobRunr steward, which holds the jobs this node is processing (set once the server exists). */
    public void attach(JobSteward steward) {
        this.steward = steward;
    }

    /** The job now running on this thread, for one execution; outside JobRunr (tests) it only reports. */
    public ThisJob begin(UUID executionId) {
        JobContext context = ThreadLocalJobContext.hasJobContext() ? ThreadLocalJobContext.getJobContext() : null;
        return new ThisJob(executionId, context);
    }

    /** One run of one execution's job on this node: what it did, and how it ends. */
    public final class ThisJob {
        private final UUID executionId;
        private final JobContext context;
        private int attempt;
        private int maxAttempts;
        private boolean held;
        private Execution claimedRow;
        private Execution endedHere;
        private long claimedNanos;

        private ThisJob(UUID executionId, JobContext context) {
            this.executionId = executionId;
            this.context = context;
        }

        /** This job claimed the execution: it runs the attempt {@code claimed.attempt()}. */
        public void claimed(Execution claimed) {
            attempt = claimed.attempt();
            maxAttempts = claimed.maxAttempts();
            claimedRow = claimed;
            claimedNanos = System.nanoTime();
        }

        /**
         * This job's attempt wrote its end ({@code outcome}, accepted by the fence): the row is
         * known without reading it back, which saves a read per execution. Only a later change
         * by someone else (none: an ended row never changes state) could make it differ.
         */
        public void wrote(Outcome outcome) {
            Execution c = claimedRow;
            if (c == null) {
                return;
            }
            endedHere = new Execution(c.id(), c.owner(), c.command(), c.image(), c.workdir(), c.env(), c.labels(),
                    c.timeoutMs(), c.maxOutputBytes(), outcome.status(), c.attempt(), c.maxAttempts(), null,
                    c.leaseEpoch(), c.outputEpoch(), null, c.cancelRequested(), c.idempotencyKey(), c.dispatchSeq(),
                    c.jobId(), null, c.createdAt(), c.startedAt(), c.startedAt() == null ? null
                    : c.startedAt().plus(Duration.ofNanos(System.nanoTime() - claimedNanos)), outcome.exitCode(),
                    outcome.errorCode(), outcome.errorMessage(),
                    new Captured(new byte[0], new byte[0], outcome.stdoutTotal()),
                    new Captured(new byte[0], new byte[0], outcome.stderrTotal()));
        }

        /**
         * This job's claim found the owner at its running cap and held the execution: the job
         * ends SUCCEEDED (it did its part), and a later job runs the execution when released.
         */
        public void held() {
            held = true;
        }

        /**
         * True once an admin deleted this job on the dashboard: JobRunr's steward found it
         * deleted in storage at its poll, marked our copy deleted and interrupted this thread.
         */
        public boolean deletedOnDashboard() {
            return context != null && context.getJobState() == StateName.DELETED;
        }

        /**
         * Ends the job as its execution ended: returns (SUCCEEDED) or throws (FAILED, or
         * DELETED through an interrupt). Call last, once the attempt is over.
         */
        public void end() throws InterruptedException {
            if (context == null) {
                return;
            }
            // An interrupt JobRunr sent (a delete, a stop) that the run swallowed would fail the reads
            // below: cleared here, passed on at the end.
            boolean interrupted = Thread.interrupted();
            if (deletedOnDashboard()) {
                cancelWhatIsLeft();
            }
            Optional<Execution> found;
            try {
                found = endedHere != null && !deletedOnDashboard() ? Optional.of(endedHere)
                        : store.find(executionId, OutputStore.Read.NONE);
            } catch (RuntimeException e) {
                // The database is away: the job's end cannot mirror what it cannot read.
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
                throw new ExecutionFailure("could not read how execution " + executionId + " ended (" + e.getMessage()
                        + "); its own state is what the API shows");
            }
            Decision d = decide(found.orElse(null));
            List<String> summary = summary(found.orElse(null), d);
            if (deletedOnDashboard()) {
                // The admin's delete stands (JobRunr will not let a deleted job change again); its page gets the summary.
                appendToStored(summary);
                throw new InterruptedException("deleted on the dashboard");
            }
            if (d.lost && endedAsLostElsewhere()) {
                // The sweep already failed this job (this node was paused or cut off): its end
                // stands. Dropped here, unsaved, so JobRunr's performer writes nothing more.
                Job local = localJob();
                if (local != null) {
                    local.delete("already failed by the sweep as a lost attempt");
                    throw new InterruptedException("already ended as a lost attempt");
                }
            }
            JobDashboardLogger logger = context.logger();
            summary.forEach(logger::info);
            switch (d.state) {
                case SUCCEEDED, FAILED -> {
                    if (interrupted) {
                        Thread.currentThread().interrupt(); // JobRunr then treats it as its stop, as before
                    }
                    if (d.state == StateName.FAILED) {
                        throw new ExecutionFailure(d.why);
                    }
                }
                default -> {
                    deleteSelf(d.why);
                    throw new InterruptedException(d.why);
                }
            }
        }

        /**
         * The admin's delete reached this job where the run could not turn it into a cancel
         * (e.g. while its sandbox was starting, which hands the execution back): whatever is
         * left of the execution is cancelled now, and a job that took it over is retired.
         */
        private void cancelWhatIsLeft() {
            try {
                Optional<Execution> e = store.find(executionId, OutputStore.Read.NONE);
                if (e.isEmpty() || e.get().status().isTerminal()) {
                    return;
                }
                store.requestCancelAsOperator(executionId, RedriveSweep.ADMIN_CANCEL);
                UUID current = e.get().jobId();
                if (!current.equals(context.getJobId())) {
                    dispatcher.retire(current, "cancelled by an admin from the dashboard (job " + context.getJobId()
                            + " was deleted)");
                }
                dispatcher.wake(Channels.CHANGED, executionId.toString());
                LOG.warn("execution {}: its JobRunr job {} was deleted on the dashboard; cancelled", executionId,
                        context.getJobId());
            } catch (RuntimeException ex) {
                LOG.warn("execution {}: could not cancel it after its job was deleted on the dashboard: {}", executionId,
                        ex.toString());
            }
        }

        private Decision decide(Execution e) {
            if (e == null) {
                return Decision.deleted("the execution " + executionId + " no longer exists (pruned)");
            }
            UUID current = JobIds.of(e.id(), e.dispatchSeq());
            if (held && e.status() == ExecutionStatus.QUEUED) {
                return Decision.succeeded("held: its owner was at its cap of running executions when this job came;"
                        + " the execution waits queued and runs under a new job once one of the owner's runs ends");
            }
            boolean mine = current.equals(context.getJobId());
            boolean ran = attempt > 0;
            String again = ran ? "" : " This job was run again (requeued) but an execution's end never changes:"
                    + " submit the command anew to run it again.";
            if (e.status().isTerminal() && (mine || (ran && e.attempt() == attempt))) {
                return mirror(e, again);
            }
            if (ran && e.attempt() < attempt) {
                return Decision.deleted("attempt " + attempt + " was handed back (no attempt spent: its sandbox could"
                        + " not start it, or its node drained); the execution continues as JobRunr job " + current);
            }
            if (ran && e.status() == ExecutionStatus.RUNNING && mine) {
                // Still running under this attempt, yet it is over here: its lease was lost.
                return new Decision(StateName.FAILED, "attempt " + attempt + " lost its lease on node " + node
                        + "; the sweep re-drives it once the lease expires (or reaps it when no attempts remain)", true);
            }
            if (ran) {
                // The row went on without this attempt's end: re-driven by the sweep or by this node.
                return new Decision(StateName.FAILED, "attempt " + attempt + " was lost on node " + node + " (its lease"
                        + " expired, or its sandbox lost the run); re-driven as attempt " + (attempt + 1) + " (JobRunr job "
                        + current + "), now " + e.status().wire(), true);
            }
            if (!mine) {
                return Decision.deleted("superseded: the execution is " + e.status().wire() + " under JobRunr job "
                        + current + "; this job carries nothing");
            }
            // The current job, not claimable, and not ended: it runs elsewhere (a duplicate run) or waits.
            return Decision.deleted("nothing to run here: the execution is " + e.status().wire()
                    + (e.status() == ExecutionStatus.RUNNING ? " as attempt " + e.attempt() + " under another run of this job" : ""));
        }

        private Decision mirror(Execution e, String again) {
            String code = e.errorCode() == null ? "" : e.errorCode() + ": ";
            String message = code + (e.errorMessage() == null ? e.status().wire() : e.errorMessage());
            return switch (e.status()) {
                case SUCCEEDED -> Decision.succeeded(again);
                case CANCELLED -> Decision.deleted(message + again);
                default -> Decision.failed(message + again);
            };
        }

        /** Deletes the job JobRunr holds for this thread and saves it: its end is DELETED with {@code why}. */
        private void deleteSelf(String why) {
            Job local = localJob();
            try {
                if (local == null) {
                    Job stored = storage.getJobById(context.getJobId());
                    stored.delete(why);
                    storage.save(stored);
                    return;
                }
                local.delete(why);
                storage.save(local);
            } catch (ConcurrentJobModificationException e) {
                // The steward saved the same job meanwhile (its poll): delete what is stored now.
                try {
                    Job stored = storage.getJobById(context.getJobId());
                    if (!stored.hasState(StateName.DELETED)) {
                        stored.delete(why);
                        storage.save(stored);
                    }
                } catch (RuntimeException again) {
                    LOG.warn("could not end JobRunr job {} DELETED: {}", context.getJobId(), again.toString());
                }
            } catch (RuntimeException e) {
                LOG.warn("could not end JobRunr job {} DELETED: {}", context.getJobId(), e.toString());
            }
        }

        private boolean endedAsLostElsewhere() {
            Job local = localJob();
            try {
                return local != null && LostAttemptPolicy.endedAsLost(local, storage.getJobById(context.getJobId()));
            } catch (RuntimeException e) {
                return false;
            }
        }

        private Job localJob() {
            JobSteward s = steward;
            if (s == null) {
                return null;
            }
            UUID id = context.getJobId();
            return s.getJobsInProgress().stream().filter(j -> j.getId().equals(id)).findFirst().orElse(null);
        }

        /** Adds the summary to the stored job (ended by someone else, e.g. deleted on the dashboard). */
        private void appendToStored(List<String> summary) {
            try {
                Job stored = storage.getJobById(context.getJobId());
                JobDashboardLogger logger = new JobDashboardLogger(stored);
                summary.forEach(logger::info);
                storage.save(stored);
            } catch (RuntimeException e) {
                LOG.debug("could not add the summary to JobRunr job {}: {}", context.getJobId(), e.toString());
            }
        }

        private List<String> summary(Execution e, Decision d) {
            List<String> lines = new ArrayList<>();
            if (e == null) {
                lines.add(d.why);
                return lines;
            }
            lines.add("execution " + e.id() + " of " + e.owner() + " (outrun status " + e.id() + ", GET /v1/executions/"
                    + e.id() + ")");
            Duration took = e.duration(Instant.now());
            lines.add(e.status().wire() + " · attempt " + Math.max(attempt, e.attempt()) + " of " + e.maxAttempts()
                    + (attempt > 0 ? " · node " + node : "")
                    + (e.exitCode() != null ? " · exit code " + e.exitCode() : "")
                    + (took != null ? " · " + human(took) : ""));
            if (d.state != StateName.SUCCEEDED || !d.why.isEmpty()) {
                lines.add(d.why.strip());
            }
            if (attempt > 0 && e.attempt() == attempt && (e.stdout().totalBytes() > 0 || e.stderr().totalBytes() > 0)) {
                tail(e, lines);
            }
            return lines;
        }

        private void tail(Execution e, List<String> lines) {
            try {
                Optional<Execution> withTail = store.find(e.id(), OutputStore.Read.since(
                        e.stdout().totalBytes() - TAIL_BYTES, e.stderr().totalBytes() - TAIL_BYTES));
                if (withTail.isEmpty()) {
                    return;
                }
                lastLines("stdout", withTail.get().stdout(), lines);
                lastLines("stderr", withTail.get().stderr(), lines);
            } catch (RuntimeException ex) {
                LOG.debug("could not read the last output of {}: {}", e.id(), ex.toString());
            }
        }
    }

    static void lastLines(String stream, Captured captured, List<String> lines) {
        if (captured == null || captured.totalBytes() == 0) {
            return;
        }
        String text = captured.since(captured.totalBytes() - TAIL_BYTES).text();
        String[] all = text.split("\n", -1);
        int end = all.length;
        while (end > 0 && all[end - 1].isBlank()) {
            end--;
        }
        int start = Math.max(0, end - TAIL_LINES);
        lines.add("last " + (end - start) + " lines of " + stream + " (" + captured.totalBytes() + " bytes in all):");
        for (int i = start; i < end; i++) {
            String line = all[i].stripTrailing();
            lines.add("  " + (line.length() > LINE_WIDTH ? line.substring(0, LINE_WIDTH - 1) + "…" : line));
        }
    }

    static String human(Duration d) {
        long ms = d.toMillis();
        if (ms < 10_000) {
            return String.format(java.util.Locale.ROOT, "%.1f s", ms / 1000.0);
        }
        long s = d.toSeconds();
        return s < 3600 ? (s / 60) + " min " + (s % 60) + " s" : (s / 3600) + " h " + (s % 3600 / 60) + " min";
    }

    /** The JobRunr end state chosen and why. */
    private record Decision(StateName state, String why, boolean lost) {
        static Decision succeeded(String why) {
            return new Decision(StateName.SUCCEEDED, why, false);
        }

        static Decision failed(String why) {
            return new Decision(StateName.FAILED, why, false);
        }

        static Decision deleted(String why) {
            return new Decision(StateName.DELETED, why, false);
        }
    }
}
