package io.outrun.sandbox.process;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The process sandbox's warm pool: run wrappers ({@code setsid bash outrun-run.sh}: wrapper.sh
 * with no arguments, in a session of their own) started ahead of need, each waiting on its stdin
 * for the one run it will serve.
 * A run handed to one skips the spawn and bash's start-up (about two thirds of the way from a
 * claim to the command's first instruction on this project's machine). Refilled in the background,
 * one spare at a time, after each take.
 *
 * <p>A waiting spare holds no pid file and runs nothing: when its stdin closes (the sandbox
 * closed, or the worker died) it exits. So a SIGKILLed worker leaves no spare behind, and a spare
 * never needs the watchdog or the leftover clean-up.
 *
 * <p>Under bubblewrap a spare is the whole sandbox made ahead (bwrap, its namespaces, the
 * wrapper, and the API relay of a node with a bridge, listening before any run comes), for the
 * runs that fit its shape: the worker's directory as workdir and the node's network. bwrap's
 * {@code --die-with-parent} ties it to the thread that spawned it, this pool's refill thread:
 * the pool's close ends the spares it handed out too (their node is stopping).
 */
final class SpareShells implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SpareShells.class);

    /** Starts one spare: the wrapper with no arguments, stdin a pipe from this JVM. */
    interface Spawner {
        Spare spawn() throws IOException;
    }

    /**
     * A waiting wrapper, and for one in bubblewrap the directories it sees that its run's files
     * go into when it is handed one (null without bubblewrap): {@code dir} its own (bound
     * read-only: the script, go file and lease file arrive there), {@code apiDir} where its
     * relay looks for the run's API socket (null: no relay).
     */
    record Spare(Process process, Path dir, Path apiDir) {
        Spare(Process process) {
            this(process, null, null);
        }

        /** Removes its directories (after its run, or when it is dismissed). */
        void removeDirs() {
            ProcessRun.deleteTree(dir);
            ProcessRun.deleteTree(apiDir);
        }
    }

    private final int size;
    private final Spawner spawner;
    private final Deque<Spare> idle = new ArrayDeque<>();
    private final ExecutorService refill = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "outrun-spare-shells");
        t.setDaemon(true);
        return t;
    });
    private boolean closed;
    private long served;

    SpareShells(int size, Spawner spawner) {
        this.size = size;
        this.spawner = spawner;
        refill.execute(this::topUp);
    }

    /** A live waiting spare, or null (none ready: the caller spawns as before). */
    synchronized Spare take() {
        Spare spare;
        while ((spare = idle.poll()) != null && !spare.process().isAlive()) {
            // Killed from outside while it waited: drop it.
            spare.removeDirs();
        }
        if (closed) {
            return null;
        }
        refill.execute(this::topUp);
        return spare;
    }

    /** Counts a run a spare took. */
    synchronized void served() {
        served++;
    }

    /** The pids of the spares waiting now (tests). */
    synchronized List<Long> waitingPids() {
        return idle.stream().map(Spare::process).filter(Process::isAlive).map(Process::pid).toList();
    }

    /** Runs served by a spare since this pool started. */
    synchronized long servedCount() {
        return served;
    }

    private void topUp() {
        while (true) {
            synchronized (this) {
                if (closed || idle.size() >= size) {
                    return;
                }
            }
            Spare spare;
            try {
                spare = spawner.spawn();
            } catch (IOException | RuntimeException e) {
                // Runs spawn as they did without the pool; the next take tries again. Never out
                // of this thread: a bubblewrap spare dies with the thread that spawned it.
                LOG.warn("process sandbox: cannot start a spare shell ({}); runs spawn their own", e.getMessage());
                return;
            }
            synchronized (this) {
                if (closed) {
                    dismiss(spare);
                    return;
                }
                idle.add(spare);
            }
        }
    }

    /** Closing its stdin is the spare's signal to leave; the kill is for one that does not listen. */
    static void dismiss(Spare spare) {
        try (OutputStream in = spare.process().getOutputStream()) {
            in.flush();
        } catch (IOException ignored) {
            // Already gone.
        }
        spare.process().destroyForcibly();
        spare.removeDirs();
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            idle.forEach(SpareShells::dismiss);
            idle.clear();
        }
        refill.shutdownNow();
    }
}
