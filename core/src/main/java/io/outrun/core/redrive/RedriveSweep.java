package io.outrun.core.redrive;

import io.outrun.core.books.BookEntry;
import io.outrun.core.books.Books;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.notify.Wakes;
import io.outrun.core.store.Channels;
import io.outrun.core.store.OutputStore;
import io.outrun.core.store.RedriveStore;
import io.outrun.core.store.RedriveStore.DashboardChange;
import io.outrun.core.store.RedriveStore.LeftOpen;
import io.outrun.core.store.Departed;
import io.outrun.core.store.SubmissionStore;
import io.outrun.core.store.SubmissionStore.CancelResult;
import io.outrun.core.trace.Tracing;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Repairs what dead nodes leave behind, and turns what an admin does on the dashboard into what
 * it means. Expired leases: back to {@code queued} with a fresh JobRunr job while attempts
 * remain, else reaped to {@code failed} ({@code lease_expired}); the dead attempt's job ends
 * {@code FAILED} with what became of the execution, so the dashboard never shows it PROCESSING on
 * a dead server. The dashboard: a job an admin deleted while its execution was queued or running
 * cancels the execution; a job an admin requeued after its execution ended ends again as it did
 * (an execution's end never changes), since no JobRunr server ever runs an execution's job.
 * What the sweep decides for a job, {@link Books} writes; the nodes it wakes, {@link Wakes} wakes.
 *
 * <p>One node of the fleet sweeps, once per interval, whatever the number of nodes: the node
 * whose heartbeat holds the {@code sweep} row of {@code fleet_tasks} (taken by the first live
 * node when its holder stops beating). (A JobRunr recurring job was the first design, but it
 * lagged up to two poll intervals behind its schedule and could not run at all while every
 * worker thread of the fleet was busy with executions, which is exactly when a dead node's work
 * most needs re-driving; a session advisory lock, the second, made every node try every
 * interval and does not survive PgBouncer's transaction pooling.) For one execution it also
 * runs when its owner polls it. Safe to run concurrently anyway: each row is decided and moved
 * by one statement that skips rows another sweep holds.
 */
public final class RedriveSweep {

    private static final Logger LOG = LoggerFactory.getLogger(RedriveSweep.class);

    private static final int BATCH = 500;

    private final RedriveStore store;
    private final SubmissionStore submissions;
    private final Books books;
    private final Wakes wakes;

    public RedriveSweep(RedriveStore store, SubmissionStore submissions, Books books, Wakes wakes) {
        this.store = store;
        this.submissions = submissions;
        this.books = books;
        this.wakes = wakes;
    }

    /** What one sweep did. */
    public record Result(int redriven, int reaped, int cancelled, int endedAgain, int booksClosed) {
        public boolean any() {
            return redriven + reaped + cancelled + endedAgain + booksClosed > 0;
        }
    }

    /** One full sweep of the fleet's executions and of the dashboard's changes. */
    public Result sweep() {
        int redriven = 0;
        int reaped = 0;
        List<Departed> moved;
        do {
            moved = store.redriveExpired(BATCH);
            for (Departed r : moved) {
                if (apply(r)) {
                    redriven++;
                } else {
                    reaped++;
                }
            }
        } while (moved.size() == BATCH);
        for (int i = 0; i < redriven; i++) {
            wakes.wake(); // one node per execution, as a submission wakes
        }
        int booksClosed = 0;
        List<LeftOpen> open;
        int closedNow;
        do {
            open = store.booksLeftOpen(BATCH); // before the dashboard's look, which moves the mark on
            closedNow = 0;
            for (LeftOpen o : open) {
                closedNow += closeBooks(o) ? 1 : 0;
            }
            booksClosed += closedNow;
        } while (open.size() == BATCH && closedNow > 0);
        int cancelled = 0;
        int endedAgain = 0;
        List<DashboardChange> changes;
        do {
            changes = store.changedOnDashboard(BATCH);
            for (DashboardChange c : changes) {
                if (c.deleted()) {
                    cancelled += cancelDeleted(c) ? 1 : 0;
                } else {
                    endedAgain += books.endRequeued(c.jobId(), id -> submissions.find(id, OutputStore.Read.NONE)) ? 1 : 0;
                }
            }
        } while (changes.size() == BATCH);
        Result result = new Result(redriven, reaped, cancelled, endedAgain, booksClosed);
        if (result.any()) {
            LOG.info("sweep: {} re-driven, {} reaped, {} cancelled and {} jobs requeued on the dashboard ended again,"
                    + " {} jobs left open by stopped nodes ended", redriven, reaped, cancelled, endedAgain, booksClosed);
        }
        return result;
    }

    /**
     * The opportunistic check when an owner polls one execution: one statement on its primary
     * key, which touches nothing while the lease is live.
     *
     * @return true when the execution was moved (re-queued or reaped)
     */
    public boolean sweepOne(UUID id) {
        List<Departed> moved = store.redriveExpired(id, 1);
        for (Departed r : moved) {
            if (apply(r)) {
                wakes.wake();
            }
        }
        return !moved.isEmpty();
    }

    /**
     * An admin deleted the job of a queued or running execution on the dashboard: the admin meant
     * to cancel it. A queued one ends cancelled now; a running one is flagged and its node kills
     * it and writes its end (the message says who cancelled).
     */
    private boolean cancelDeleted(DashboardChange c) {
        CancelResult result = submissions.requestCancelAsOperator(c.executionId(), ADMIN_CANCEL);
        LOG.warn("execution {}: its job {} was deleted on the dashboard; cancelling it ({})", c.executionId(), c.jobId(), result);
        switch (result) {
            case CANCELLED_WHILE_QUEUED -> wakes.wake(Channels.CHANGED, c.executionId().toString());
            case REQUESTED -> wakes.wake(Channels.CANCEL, c.executionId().toString());
            default -> {
                return false;
            }
        }
        return true;
    }

    /**
     * The execution ended, but its node stopped (SIGKILL, power) before its books wrote the end on
     * its JobRunr job, which would otherwise show it PROCESSING on a dead server until JobRunr
     * failed it as an orphan, a minute later and wrongly for a success. Ended here as the row says.
     */
    private boolean closeBooks(LeftOpen o) {
        String why = BookEntry.why(o.status(), o.errorCode(), o.errorMessage());
        List<String> summary = new ArrayList<>();
        summary.add("execution " + o.executionId() + " of " + o.owner() + " (outrun status " + o.executionId()
                + ", GET /v1/executions/" + o.executionId() + ")");
        summary.add(o.status().wire() + " · attempt " + o.attempt() + " of " + o.maxAttempts()
                + (o.exitCode() != null ? " · exit code " + o.exitCode() : ""));
        if (o.status() != ExecutionStatus.SUCCEEDED) {
            summary.add(why);
        }
        summary.add("Its node stopped before it wrote this job's end; the fleet's sweep wrote it from the execution.");
        boolean closed = books.closeLeftOpen(o.jobId(), BookEntry.as(o.status(), why, () -> summary));
        if (closed) {
            LOG.info("execution {} of {} ended {}, but its node stopped before writing JobRunr job {}; ended it",
                    o.executionId(), o.owner(), o.status().wire(), o.jobId());
        }
        return closed;
    }

    /** What an execution cancelled by deleting its job on the JobRunr dashboard says. */
    public static final String ADMIN_CANCEL = "Cancelled by an admin from the dashboard (its JobRunr job was deleted).";

    /** @return true when re-driven (a new job was enqueued), false when it ended (reaped or cancelled) */
    private boolean apply(Departed r) {
        boolean redriven = r.status() == ExecutionStatus.QUEUED;
        String lost = "attempt " + r.attempt() + " lost its lease (its worker stopped renewing it); ";
        switch (r.status()) {
            case QUEUED -> books.failLost(r.deadJobId(), lost + "re-driven as attempt " + (r.attempt() + 1)
                    + " (JobRunr job " + r.newJobId() + ")");
            case CANCELLED -> books.retire(r.deadJobId(), "cancelled by its owner; attempt " + r.attempt()
                    + " lost its lease before it could confirm the command stopped");
            default -> books.failLost(r.deadJobId(), lost + "reaped: no attempts remain, the execution ended "
                    + r.status().wire() + " (lease_expired)");
        }
        Tracing tracing = Tracing.process();
        if (tracing.on()) {
            // One read per lost attempt, only while this node traces: the trace is kept with the row.
            submissions.find(r.id(), OutputStore.Read.NONE).ifPresent(e -> tracing.mark(e.trace(),
                    redriven ? "execution.redrive" : "execution.end", r.id(), r.attempt(), r.status().wire()));
        }
        if (redriven) {
            LOG.warn("execution {} of {}: attempt {} lost its lease; re-driven", r.id(), r.owner(), r.attempt());
            books.enqueue(r.id(), r.bookSeq(), r.owner(), r.command(), r.attempt() + 1);
        } else {
            LOG.warn("execution {} of {}: attempt {} lost its lease; ended {}", r.id(), r.owner(), r.attempt(), r.status().wire());
            // Long polls of it answer now: no worker will write this execution again.
            wakes.wake(Channels.CHANGED, r.id().toString());
        }
        return redriven;
    }
}
