package io.outrun.redrive;

import io.outrun.dispatch.Dispatcher;
import io.outrun.execution.Execution;
import io.outrun.execution.ExecutionStatus;
import io.outrun.owner.HeldWork;
import io.outrun.execution.JobIds;
import io.outrun.store.Channels;
import io.outrun.store.RedriveStore;
import io.outrun.store.Redriven;
import io.outrun.store.SubmissionStore;
import io.outrun.store.SubmissionStore.CancelResult;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Repairs what dead nodes leave behind. Expired leases: back to {@code queued} with a fresh
 * JobRunr job while attempts remain, else reaped to {@code failed} ({@code lease_expired}). Lost
 * dispatches: {@code queued} rows whose job vanished get a fresh job, unless an admin deleted that
 * job on the dashboard, which cancels the execution. Held work: released as its owner has room. The dead attempt's job ends {@code FAILED}
 * with what became of the execution, so the dashboard never shows it PROCESSING on a dead server.
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

    /** Default of {@code --lost-dispatch-grace-s}, for API and worker nodes alike. */
    public static final int DEFAULT_LOST_DISPATCH_GRACE_S = 15;
    private static final int BATCH = 500;

    private final RedriveStore store;
    private final SubmissionStore submissions;
    private final Dispatcher dispatcher;
    private final Duration lostDispatchGrace;
    private final HeldWork held;

    /**
     * @param lostDispatchGrace how long a queued row may wait before its missing job counts as
     *                          lost (covers the moment between commit and enqueue)
     */
    public RedriveSweep(RedriveStore store, SubmissionStore submissions, Dispatcher dispatcher, Duration lostDispatchGrace, HeldWork held) {
        this.held = held;
        this.store = store;
        this.submissions = submissions;
        this.dispatcher = dispatcher;
        this.lostDispatchGrace = lostDispatchGrace;
    }

    /** What one sweep did. */
    public record Result(int requeued, int reaped, int redispatched, int released) {
        public boolean any() {
            return requeued + reaped + redispatched + released > 0;
        }
    }

    /** One full sweep of the fleet's executions. */
    public Result sweep() {
        int requeued = 0;
        int reaped = 0;
        int redispatched = 0;
        List<Redriven> moved;
        do {
            moved = store.redriveExpired(BATCH);
            for (Redriven r : moved) {
                if (apply(r)) {
                    requeued++;
                } else {
                    reaped++;
                }
            }
        } while (moved.size() == BATCH);
        List<Execution> lost;
        do {
            lost = store.redispatchLost(lostDispatchGrace, BATCH);
            for (Execution e : lost) {
                if (deletedByAnAdmin(e)) {
                    continue;
                }
                LOG.warn("execution {} of {} was queued without a live JobRunr job; dispatching it again", e.id(), e.owner());
                dispatcher.enqueue(e.id(), e.dispatchSeq(), e.owner(), e.command(), e.attempt() + 1);
                redispatched++;
            }
        } while (lost.size() == BATCH);
        for (int i = 0; i < requeued + redispatched; i++) {
            dispatcher.wake(); // one node per job, as a submission wakes (a job's end does not look for them)
        }
        // Held work whose owner has room that no claim or end released (a crash, a raised cap).
        int released = held.releaseAll();
        Result result = new Result(requeued, reaped, redispatched, released);
        if (requeued + reaped + redispatched > 0) {
            LOG.info("sweep: {} re-queued, {} reaped, {} re-dispatched, {} released", requeued, reaped, redispatched, released);
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
        List<Redriven> moved = store.redriveExpired(id, 1);
        for (Redriven r : moved) {
            if (apply(r)) {
                dispatcher.wake();
            }
        }
        return !moved.isEmpty();
    }

    /**
     * A queued execution whose job an admin deleted on the dashboard (the only way a queued
     * execution's own job ends DELETED; Outrun deletes a job only once its execution has left
     * {@code queued}): the admin meant to cancel it, so it is cancelled, not dispatched again.
     */
    private boolean deletedByAnAdmin(Execution e) {
        // redispatchLost moved the row to its next dispatch: the job it lost is the previous one.
        UUID lostJob = JobIds.of(e.id(), e.dispatchSeq() - 1);
        if (!dispatcher.isDeleted(lostJob)) {
            return false;
        }
        CancelResult result = submissions.requestCancelAsOperator(e.id(), ADMIN_CANCEL);
        LOG.warn("execution {} of {}: its queued job {} was deleted on the dashboard; cancelled ({})", e.id(), e.owner(),
                lostJob, result);
        dispatcher.wake(Channels.CHANGED, e.id().toString());
        return true;
    }

    /** What an execution cancelled by deleting its job on the JobRunr dashboard says. */
    public static final String ADMIN_CANCEL = "Cancelled by an admin from the dashboard (its JobRunr job was deleted).";

    /** @return true when re-queued (a new job was enqueued), false when it ended (reaped or cancelled) */
    private boolean apply(Redriven r) {
        boolean requeued = r.status() == ExecutionStatus.QUEUED;
        String lost = "attempt " + r.attempt() + " lost its lease (its worker stopped renewing it); ";
        switch (r.status()) {
            case QUEUED -> dispatcher.failLost(r.deadJobId(), lost + "re-driven as attempt " + (r.attempt() + 1)
                    + " (JobRunr job " + r.newJobId() + ")");
            case CANCELLED -> dispatcher.retire(r.deadJobId(), "cancelled by its owner; attempt " + r.attempt()
                    + " lost its lease before it could confirm the command stopped");
            default -> dispatcher.failLost(r.deadJobId(), lost + "reaped: no attempts remain, the execution ended "
                    + r.status().wire() + " (lease_expired)");
        }
        if (requeued) {
            LOG.warn("execution {} of {}: attempt {} lost its lease; re-queued", r.id(), r.owner(), r.attempt());
            dispatcher.enqueue(r.id(), r.dispatchSeq(), r.owner(), r.command(), r.attempt() + 1);
        } else {
            LOG.warn("execution {} of {}: attempt {} lost its lease; ended {}", r.id(), r.owner(), r.attempt(), r.status().wire());
            // Long polls of it answer now: no worker will write this execution again.
            dispatcher.wake(Channels.CHANGED, r.id().toString());
        }
        return requeued;
    }
}
