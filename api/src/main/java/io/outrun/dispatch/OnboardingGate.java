package io.outrun.dispatch;

import java.util.concurrent.atomic.AtomicLong;
import org.jobrunr.server.BackgroundJobServer;
import org.jobrunr.server.configuration.BackgroundJobServerWorkerPolicy;
import org.jobrunr.server.configuration.DefaultBackgroundJobServerWorkerPolicy;
import org.jobrunr.server.strategy.BasicWorkDistributionStrategy;
import org.jobrunr.server.strategy.WorkDistributionStrategy;
import org.jobrunr.server.threadpool.JobRunrExecutor;
import org.jobrunr.storage.navigation.AmountRequest;

/**
 * Skips JobRunr's onboarding query at the end of a job when this node has reason to believe
 * nothing is queued. JobRunr onboards ({@code BEGIN}, {@code SELECT … FOR UPDATE SKIP LOCKED},
 * {@code COMMIT}) whenever one of its jobs ends, to chain through a backlog; on a fleet that is
 * not saturated new work arrives by wake-up instead, and that query finds nothing: half of all
 * onboarding queries and three statements per execution ({@code bench/fleet}).
 *
 * <p>A job's end looks anyway when a wake-up was heard since the last look, or when the last
 * look filled every free slot (more may be queued). Work submitted while no node had a free
 * slot reaches the busy nodes as a wake-up too ({@code Notifier.wakeNodes}), so whichever run
 * ends first onboards it, as with stock JobRunr. JobRunr's periodic poll and every wake-up
 * always look: a lost notification costs at most one poll interval, as before (a retry whose
 * delay ended is announced by {@link DueWake}). A wake-up whose look JobRunr skipped because
 * another look held its lock is retried ({@link StewardWake}): that look may have queried
 * before the new work committed.
 *
 * <p>It is JobRunr's worker policy for the node: JobRunr's default worker pool of the node's
 * slots, with JobRunr's own distribution strategy wrapped. {@code InstantPickupIT} and {@code
 * OnboardingGateIT} fail if a JobRunr upgrade breaks this.
 */
public final class OnboardingGate implements BackgroundJobServerWorkerPolicy {

    /** Set on a worker thread as its job ends, read by the onboarding JobRunr runs next on that thread. */
    private static final ThreadLocal<Boolean> JOB_END = new ThreadLocal<>();
    /** Set on the thread that looked: JobRunr skips a look silently while another one holds its lock. */
    private static final ThreadLocal<Boolean> LOOKED = new ThreadLocal<>();

    private final int slots;
    private final AtomicLong handed = new AtomicLong();
    private volatile boolean maybeQueued = true;
    private long handedAtLastLook;
    private int lastLookLimit;
    private final AtomicLong skipped = new AtomicLong();
    private long jobEndLooks;
    private long otherLooks;

    public OnboardingGate(int slots) {
        this.slots = slots;
    }

    /** Called by a job on its worker thread as it ends: the onboarding that follows is a job end's. */
    public static void jobEnding() {
        JOB_END.set(Boolean.TRUE);
    }

    /**
     * Whether JobRunr asked this gate on the calling thread since the last call: false when the
     * onboarding just asked for did not run (another look held JobRunr's lock; that one may have
     * queried before the new work committed).
     */
    static boolean lookedHere() {
        boolean looked = Boolean.TRUE.equals(LOOKED.get());
        LOOKED.remove();
        return looked;
    }

    /** A wake-up was heard: the next look, whoever runs it, queries. */
    public void workMayBeQueued() {
        maybeQueued = true;
    }

    /** JobRunr handed one job to a worker of this node (see {@link GatedJobServer}). */
    void handed() {
        handed.incrementAndGet();
    }

    /** Job ends that skipped the onboarding query (metrics, tests). */
    public long skipped() {
        return skipped.get();
    }

    /** Looks not at a job's end: JobRunr's polls and wake-ups (tests wait on it). */
    public synchronized long otherLooks() {
        return otherLooks;
    }

    /** Job ends the gate decided on, skipped or not (tests wait on it). */
    public synchronized long jobEnds() {
        return jobEndLooks + skipped.get();
    }

    /** What the gate did, for the node's log at shutdown. */
    @Override
    public synchronized String toString() {
        return "onboarding looks: " + otherLooks + " on wake-ups and polls, " + jobEndLooks + " at job ends, "
                + skipped.get() + " job ends skipped; " + handed.get() + " jobs handed to workers";
    }

    @Override
    public WorkDistributionStrategy toWorkDistributionStrategy(BackgroundJobServer server) {
        WorkDistributionStrategy jobrunr = new BasicWorkDistributionStrategy(server, slots);
        return new WorkDistributionStrategy() {
            @Override
            public int getWorkerCount() {
                return jobrunr.getWorkerCount();
            }

            @Override
            public AmountRequest getWorkPageRequest() {
                return decide(jobrunr.getWorkPageRequest());
            }
        };
    }

    @Override
    public JobRunrExecutor toJobRunrExecutor() {
        // JobRunr's own, as andWorkerCount(slots) makes it (its worker threads and their names).
        return new DefaultBackgroundJobServerWorkerPolicy(slots).toJobRunrExecutor();
    }

    /** Runs under JobRunr's onboarding lock (one look at a time on this node). */
    private synchronized AmountRequest decide(AmountRequest free) {
        LOOKED.set(Boolean.TRUE);
        boolean jobEnd = Boolean.TRUE.equals(JOB_END.get());
        JOB_END.remove();
        if (lastLookLimit > 0 && handed.get() - handedAtLastLook >= lastLookLimit) {
            maybeQueued = true; // the last look took as many as it asked for: there may be more
        }
        int limit = free.getLimit();
        if (limit <= 0) {
            return free;
        }
        if (jobEnd && !maybeQueued) {
            skipped.incrementAndGet();
            lastLookLimit = 0;
            return new AmountRequest(free.getOrder(), 0);
        }
        if (jobEnd) {
            jobEndLooks++;
        } else {
            otherLooks++;
        }
        // Cleared before the query: a wake-up heard while it runs makes the next look query again.
        maybeQueued = false;
        handedAtLastLook = handed.get();
        lastLookLimit = limit;
        return free;
    }
}
