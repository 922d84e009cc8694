package io.outrun.dispatch;

import org.jobrunr.jobs.Job;
import org.jobrunr.jobs.filters.ApplyStateFilter;
import org.jobrunr.jobs.states.JobState;
import org.jobrunr.jobs.states.StateName;

/**
 * Wakes the fleet when JobRunr enqueues a job whose delay ended (a hand-back's retry, an attempt
 * the sandbox lost): JobRunr's master moves it from SCHEDULED to ENQUEUED without any
 * notification, and a job's end no longer looks for work it was not told of
 * ({@link OnboardingGate}). Runs on the node whose server is JobRunr's master.
 */
public final class DueWake implements ApplyStateFilter {

    private final Dispatcher dispatcher;

    public DueWake(Dispatcher dispatcher) {
        this.dispatcher = dispatcher;
    }

    @Override
    public void onStateApplied(Job job, JobState oldState, JobState newState) {
        if (oldState != null && oldState.getName() == StateName.SCHEDULED && newState.getName() == StateName.ENQUEUED) {
            dispatcher.wake();
        }
    }
}
