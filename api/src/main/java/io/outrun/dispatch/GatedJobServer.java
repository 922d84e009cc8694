package io.outrun.dispatch;

import org.jobrunr.jobs.Job;
import org.jobrunr.server.BackgroundJobServer;
import org.jobrunr.server.BackgroundJobServerConfiguration;
import org.jobrunr.server.JobActivator;
import org.jobrunr.storage.StorageProvider;
import org.jobrunr.utils.mapper.JsonMapper;

/**
 * JobRunr's job server with its worker policy set to the node's {@link OnboardingGate}, which it
 * also tells of every job handed to a worker (so the gate knows whether a look filled its page).
 */
public final class GatedJobServer extends BackgroundJobServer {

    private final OnboardingGate gate;

    public GatedJobServer(StorageProvider storage, JsonMapper jsonMapper, JobActivator activator,
                          BackgroundJobServerConfiguration configuration, OnboardingGate gate) {
        super(storage, jsonMapper, activator, configuration.andBackgroundJobServerWorkerPolicy(gate));
        this.gate = gate;
    }

    @Override
    public void processJob(Job job) {
        if (gate != null) { // null only while the super constructor runs
            gate.handed();
        }
        super.processJob(job);
    }
}
