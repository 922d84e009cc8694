package io.outrun.dispatch;

import java.util.ArrayList;
import java.util.List;
import org.jobrunr.jobs.Job;
import org.jobrunr.jobs.states.FailedState;
import org.jobrunr.jobs.states.StateName;
import org.jobrunr.server.BackgroundJobServer;
import org.jobrunr.server.concurrent.ConcurrentJobModificationResolveResult;
import org.jobrunr.server.concurrent.ConcurrentJobModificationResolver;
import org.jobrunr.server.concurrent.DefaultConcurrentJobModificationResolver;
import org.jobrunr.server.concurrent.UnresolvableConcurrentJobModificationException;
import org.jobrunr.server.configuration.ConcurrentJobModificationPolicy;
import org.jobrunr.storage.ConcurrentJobModificationException;

/**
 * JobRunr's own handling of a job changed under the node that runs it, plus one case of ours: the
 * sweep failed the job of an attempt whose lease expired ({@link LostAttempt}) while this node was
 * paused or cut off, and this node, back, still holds it as processing. JobRunr would call that
 * unresolvable (and report a severe problem on the dashboard at each poll); for us it is settled:
 * the stored end stands, the run is killed by the lease machinery, and the job's thread ends
 * without writing (see {@link JobOutcome}).
 */
public final class LostAttemptPolicy implements ConcurrentJobModificationPolicy {

    @Override
    public ConcurrentJobModificationResolver toConcurrentJobModificationResolver(BackgroundJobServer server) {
        DefaultConcurrentJobModificationResolver defaults = new DefaultConcurrentJobModificationResolver(server);
        return (ConcurrentJobModificationException e) -> {
            List<ConcurrentJobModificationResolveResult> unresolved = new ArrayList<>();
            for (Job local : e.getConcurrentUpdatedJobs()) {
                ConcurrentJobModificationResolveResult r = defaults.resolve(local);
                if (r.failed() && !endedAsLost(local, r.getJobFromStorage())) {
                    unresolved.add(r);
                }
            }
            if (!unresolved.isEmpty()) {
                throw new UnresolvableConcurrentJobModificationException(unresolved, e);
            }
        };
    }

    /**
     * True when the stored job was failed by the sweep as a lost attempt while we still process it
     * (or have just dropped it unsaved, see {@link JobOutcome}, while JobRunr's steward was saving it).
     */
    public static boolean endedAsLost(Job local, Job stored) {
        boolean ours = local.hasState(StateName.PROCESSING) || local.hasState(StateName.DELETED);
        if (stored == null || !ours || !stored.hasState(StateName.FAILED)) {
            return false;
        }
        FailedState failed = stored.getJobState();
        return LostAttempt.class.getName().equals(failed.getExceptionType());
    }
}
