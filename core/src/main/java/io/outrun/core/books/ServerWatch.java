package io.outrun.core.books;

import org.jobrunr.server.BackgroundJobServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * JobRunr OSS stops its server for good after six storage errors in a row (a database outage of
 * about half a minute does it), and the node would then be missing from the dashboard's servers
 * page, and from JobRunr's housekeeping, for the rest of its life. Work never waits for that
 * server (the claim loop takes it), but the dashboard must tell the truth: seen stopped twice in a
 * row (not merely changing state), the server is started again, through its public API.
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
