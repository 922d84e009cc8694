package io.outrun.dispatch;

/** The recurring re-drive sweep, as a JobRunr job; implemented by the worker. */
public interface SweepRunner {
    void sweep() throws Exception;
}
