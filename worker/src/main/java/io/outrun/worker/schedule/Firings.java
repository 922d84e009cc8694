package io.outrun.worker.schedule;

import io.outrun.core.books.Books;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.owner.TooManyQueuedException;
import io.outrun.core.schedule.SubmissionJson;
import io.outrun.core.service.ExecutionService;
import io.outrun.core.store.ScheduleStore;
import io.outrun.core.store.SubmissionStore;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the firings JobRunr enqueued for schedules into executions, once each: the execution's
 * idempotency key is the firing job's id, so a pass cut short (its node killed between the
 * submit and the job's end) or two sweepers at a hand-over make one execution. Then the firing
 * job is ended: SUCCEEDED naming the execution (or saying why it was skipped), DELETED when its
 * schedule is gone. Run by the fleet's sweeper, one pass at a time.
 */
public final class Firings {

    private static final Logger LOG = LoggerFactory.getLogger(Firings.class);
    /** The label every fired execution carries: which schedule made it. */
    public static final String LABEL = "schedule";

    private final ScheduleStore schedules;
    private final SubmissionStore executions;
    private final ExecutionService service;
    private final Books books;

    public Firings(ScheduleStore schedules, SubmissionStore executions, ExecutionService service, Books books) {
        this.schedules = schedules;
        this.executions = executions;
        this.service = service;
        this.books = books;
    }

    /** One pass: the firings enqueued now, in batches, for at most 4 s. Returns how many it handled. */
    public int fire() {
        long until = System.nanoTime() + 4_000_000_000L;
        int handled = 0;
        while (true) {
            List<ScheduleStore.Firing> due = schedules.enqueuedFirings(BATCH);
            int failed = 0;
            for (ScheduleStore.Firing f : due) {
                try {
                    fire(f);
                } catch (RuntimeException e) {
                    failed++;
                    LOG.warn("could not fire job {} of recurring job {} ({}); trying again at the next pass", f.jobId(),
                            f.recurringJobId(), e.toString());
                }
            }
            handled += due.size();
            // A full batch may have more behind it; one that failed in part would only fail again now.
            if (due.size() < BATCH || failed > 0 || System.nanoTime() - until > 0) {
                return handled;
            }
        }
    }

    private static final int BATCH = 50;

    private void fire(ScheduleStore.Firing f) {
        Optional<ScheduleStore.Row> found = schedules.byRecurringJob(f.recurringJobId());
        if (found.isEmpty()) {
            books.endFiring(f.jobId(), false, "its schedule was deleted: nothing was run");
            return;
        }
        ScheduleStore.Row s = found.get();
        String key = "schedule-" + f.jobId();
        Optional<Execution> already = executions.findByIdempotencyKey(s.owner(), key);
        if (already.isPresent()) {
            // A pass cut short after its submit: the schedule's last execution is this one.
            if (!already.get().id().equals(s.lastExecutionId())) {
                schedules.fired(s.recurringJobId(), already.get().id());
            }
            books.endFiring(f.jobId(), true, "fired execution " + already.get().id());
            return;
        }
        if (s.overlap().equals("skip") && s.lastExecutionId() != null) {
            Optional<ExecutionStatus> last = executions.statusOwned(s.lastExecutionId(), s.owner());
            if (last.isPresent() && !last.get().isTerminal()) {
                schedules.skipped(s.recurringJobId());
                books.endFiring(f.jobId(), true, "skipped: execution " + s.lastExecutionId() + " of the previous"
                        + " firing is still " + last.get().wire() + " (overlap: skip)");
                LOG.info("schedule {} of {}: firing skipped, execution {} still {}", s.name(), s.owner(),
                        s.lastExecutionId(), last.get().wire());
                return;
            }
        }
        Submission base = SubmissionJson.read(s.submissionJson());
        Map<String, String> labels = new LinkedHashMap<>(base.labels());
        labels.put(LABEL, s.name());
        Submission submission = base.withLabels(labels).withIdempotencyKey(key);
        SubmissionStore.Inserted inserted;
        try {
            inserted = service.submit(submission);
        } catch (TooManyQueuedException full) {
            schedules.skipped(s.recurringJobId());
            books.endFiring(f.jobId(), false, "not run: the owner's queue is full (" + full.queued() + " queued)");
            return;
        }
        Execution e = inserted.execution();
        if (schedules.byRecurringJob(s.recurringJobId()).isEmpty()) {
            // Deleted while this firing was being made: its owner was told no firing runs after it.
            service.cancel(e.id(), s.owner());
            books.endFiring(f.jobId(), false, "its schedule was deleted as it fired: execution " + e.id()
                    + " was cancelled");
            return;
        }
        if (inserted.created()) {
            schedules.fired(s.recurringJobId(), e.id()); // once, whichever sweeper made it
        }
        books.endFiring(f.jobId(), true, "fired execution " + e.id());
        LOG.info("schedule {} of {} fired execution {}", s.name(), s.owner(), e.id());
    }
}
