package io.outrun.sandbox.process;

import io.outrun.sandbox.script.BashScript;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * One host process per node that is every run's kill switch and reaper: a bash in a session of
 * its own, outside the worker's JVM, so that it outlives the worker.
 *
 * <p>Each second it reads the pid file of every run of this node (a placeholder written by the
 * worker before the spawn, then {@code <pid> <start time> <lease file>} written by the run's
 * wrapper before its command) and kills the run's whole process group once
 * the deadline in its lease file has passed: the worker has stopped confirming the lease (dead,
 * paused, cut off from the database) and another node may run the execution's next attempt.
 * While the worker lives it also kills, on the worker's word (a line {@code k <pgid>} on its
 * stdin), what is left of the group of a run whose leader ended: a bash that exited may leave
 * background children.
 *
 * <p>Its stdin is a pipe from the worker: end of file there means the worker is gone (or closed
 * the sandbox). It then stays on guard while any of its runs' groups lives, and leaves once the
 * last one ended or was killed at its deadline.
 *
 * <p>Why one per node and not one per run: a watchdog forked beside each run was about two of the
 * three bash processes a short run cost (a trivial command ran at a third of the rate of
 * {@code ProcessBuilder} + {@code bash -c}). The price: a run's kill switch now lives as long as
 * this one process; if it is killed, the worker starts another at its next run, reap or leftover
 * clean-up pass (the new one finds every pid file again), but a run whose worker and watchdog
 * both died has only the leftover clean-up of the node's next start.
 */
final class NodeWatchdog implements AutoCloseable {

    /**
     * The watchdog itself ({@code watchdog.sh} beside this class), run as
     * {@code setsid bash -c <text> outrun-process-watch RUNS TAG}: $1 the directory of pid files,
     * $2 this node's tag (its files are {@code *.$2.pid}); stdin the worker's {@code k <pgid>} lines.
     */
    static final BashScript SCRIPT = BashScript.of(NodeWatchdog.class, "watchdog.sh");

    private final Path runs;
    private final String tag;
    private Process process;
    private OutputStream commands;
    private boolean closed;

    NodeWatchdog(Path runs, String tag) {
        this.runs = runs;
        this.tag = tag;
    }

    /** Starts the watchdog if it is not running (first run, or it died): runs must not start unguarded. */
    synchronized void ensureRunning() throws IOException {
        if (closed) {
            throw new IOException("the process sandbox is closed");
        }
        if (process != null && process.isAlive()) {
            return;
        }
        if (commands != null) {
            closeQuietly(commands);
        }
        List<String> argv = new ArrayList<>(List.of("/usr/bin/setsid"));
        argv.addAll(SCRIPT.inline("outrun-process-watch", runs.toString(), tag));
        ProcessBuilder builder = new ProcessBuilder(argv);
        builder.environment().clear();
        builder.environment().put("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        // Never a pipe to this JVM: a dead worker's pipe would end the watchdog at its first write.
        builder.redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD);
        process = builder.start();
        commands = process.getOutputStream();
    }

    /**
     * Starts a watchdog again if the one this node had died (someone killed it): called by the
     * periodic leftover clean-up, so that runs started before keep their kill switch even when
     * the node starts nothing new. A node that never ran anything starts none.
     */
    synchronized void revive() {
        if (process != null && !process.isAlive() && !closed) {
            try {
                ensureRunning();
            } catch (IOException e) {
                // The next run's start tries again, and fails loudly then.
            }
        }
    }

    /** The leader of {@code pgid} has exited: kill whatever is left in its group. */
    void reap(long pgid) {
        byte[] line = ("k " + pgid + "\n").getBytes(StandardCharsets.US_ASCII);
        synchronized (this) {
            for (int tries = 0; tries < 2 && !closed; tries++) {
                try {
                    ensureRunning();
                    commands.write(line);
                    commands.flush();
                    return;
                } catch (IOException e) {
                    // It died (broken pipe): the next try starts another one.
                    process = null;
                }
            }
        }
        // Closed, or no watchdog can start: kill directly.
        ProcessRun.killGroup(pgid);
    }

    /** The watchdog's pid, or -1 while none runs (tests). */
    synchronized long pid() {
        return process != null && process.isAlive() ? process.pid() : -1;
    }

    /**
     * As a worker's death does: the watchdog's pipe closes and it stays on guard while any of its
     * runs lives. Runs still open keep their kill switch.
     */
    @Override
    public synchronized void close() {
        closed = true;
        if (commands != null) {
            closeQuietly(commands);
        }
    }

    private static void closeQuietly(OutputStream out) {
        try {
            out.close();
        } catch (IOException ignored) {
            // Already broken: the watchdog is gone or going.
        }
    }
}
