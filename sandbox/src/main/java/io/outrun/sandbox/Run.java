package io.outrun.sandbox;

import io.outrun.sandbox.capture.Captured;
import java.time.Duration;
import java.util.Optional;

/**
 * One running command. Thread-safe: the worker's heartbeat reads output while another thread
 * awaits the exit.
 */
public interface Run extends AutoCloseable {

    /** What has been captured of stdout so far (bounded: head and tail). */
    Captured stdout();

    /** What has been captured of stderr so far (bounded: head and tail). */
    Captured stderr();

    /**
     * Waits up to {@code wait} for the command to end. Enforces the spec's timeout: once the
     * deadline passes the run is killed and its exit says {@code timedOut}. Never closes the
     * output streams early; an empty answer means "still running".
     */
    Optional<Exit> awaitExit(Duration wait) throws InterruptedException;

    /** Kills the whole run (every process of it). Idempotent; returns at once. */
    void kill();

    /** Kills if still running and removes every trace (container, temp files). Idempotent. */
    @Override
    void close();
}
