package io.outrun.dispatch;

import org.jobrunr.server.BackgroundJobServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * JobRunr OSS stops its server for good after six storage errors in a row (a database outage of
 * about a minute does it), leaving a live process that never takes work again. Seen stopped twice
 * in a row (not merely changing state), the server is started again.
 */
public final class ServerWatch {

    private static final Logger LOG = LoggerFactory.getLogger(ServerWatch.class);

    private final BackgroundJobServer server;
    private final String node;
    private int downChecks;

    public ServerWatch(BackgroundJobServer server, String node) {
        this.server = server;
        this.node = node;
    }

    /** One look at the server; called from one thread only. */
    public void check() {
        if (server.isRunning()) {
            downChecks = 0;
            return;
        }
        if (++downChecks < 2) {
            return;
        }
        LOG.error("JobRunr's background job server of {} has stopped (it does after repeated database errors); restarting it",
                node);
        try {
            server.start();
            downChecks = 0;
        } catch (RuntimeException e) {
            LOG.warn("could not restart JobRunr's server; retrying at the next check", e);
        }
    }
}
