package io.outrun.sandbox;

import io.outrun.model.output.Captured;
import io.outrun.sandbox.capture.BoundedCapture;
import io.outrun.sandbox.capture.FullOutput;
import io.outrun.sandbox.files.WorkdirVisitor;
import java.io.IOException;
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
     * Adds a line of Outrun's own to the run's stderr, where its owner reads the command's (the
     * egress proxy's refusals): kept like the command's bytes, with no ordering against them
     * beyond arrival.
     */
    default void noteStderr(String text) {
    }

    /**
     * The raw bytes still kept of a stream ({@code 1} stdout, {@code 2} stderr) from byte offset
     * {@code from} on, at their exact offsets: what a store appends to stay a copy of the capture.
     */
    BoundedCapture.Since keptSince(int stream, long from);

    /**
     * Waits up to {@code wait} for the command to end. Enforces the spec's timeout: once the
     * deadline passes the run is killed and its exit says {@code timedOut}. Never closes the
     * output streams early; an empty answer means "still running".
     */
    Optional<Exit> awaitExit(Duration wait) throws InterruptedException;

    /**
     * Asks the backend to kill the whole run (every process of it). Safe to call again; callers
     * that must be sure call it until {@link #awaitExit} reports the end.
     *
     * @return true when the kill was delivered or the run had already ended; false when the
     *         backend failed to deliver it (an engine that does not answer): call again later
     */
    boolean kill();

    /**
     * Reads {@code path} (relative to the workdir; "" for all of it) once the command ended, one
     * entry at a time, links reported and never followed. Only for runs whose spec asked for it
     * ({@link io.outrun.sandbox.files.RunFiles#keepWorkdir}); before {@link #close()}.
     */
    default void readWorkdir(String path, WorkdirVisitor visitor) throws IOException {
        throw new UnsupportedOperationException("this run's workdir cannot be read back");
    }

    /**
     * The whole of a stream ({@code 1} stdout, {@code 2} stderr) once it outgrew its head+tail
     * bound, gzipped in a temp file that {@link #close()} removes; empty when it never did or the
     * spec does not keep it. Call once the run ended.
     */
    default Optional<FullOutput.Spooled> fullOutput(int stream) {
        return Optional.empty();
    }

    /**
     * Appends {@code bytes} to the command's stdin, in order, for a run whose spec keeps stdin open
     * ({@link RunSpec#stdin()}). May block while the command does not read (a full pipe); fails
     * once the run has ended or its stdin was closed.
     */
    default void writeStdin(byte[] bytes) throws IOException {
        throw new IOException("this run's stdin is /dev/null: it was not submitted with stdin open");
    }

    /** Ends the command's stdin (end of file); safe to call again. */
    default void closeStdin() throws IOException {
        // Nothing to close: a run without stdin reads /dev/null.
    }

    /** Kills if still running and removes every trace (container, temp files). Idempotent. */
    @Override
    void close();
}
