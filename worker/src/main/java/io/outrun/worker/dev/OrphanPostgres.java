package io.outrun.worker.dev;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;

/**
 * A PostgreSQL left running on a dev data directory by an {@code outrun dev} that died without
 * stopping it (SIGKILL, a crash): the embedded PostgreSQL runs detached from the JVM, so it
 * survives it, and the next start on the same directory would fail on its {@code postmaster.pid}.
 *
 * <p>Call only while holding the {@link DataDirLock}: then no live {@code outrun dev} uses the
 * directory, and a live postmaster named by {@code postmaster.pid} whose command line names this
 * very data directory is an orphan. It is stopped the way {@code pg_ctl stop -m fast} does
 * (SIGINT: roll back, checkpoint, exit), and killed only if it ignores that.
 */
public final class OrphanPostgres {

    /** The lock file io.zonky's EmbeddedPostgres holds in the data directory while it runs it. */
    static final String EMBEDDING_LOCK = "epg-lock";

    private static final Duration FAST_SHUTDOWN_WAIT = Duration.ofSeconds(30);
    private static final Duration KILL_WAIT = Duration.ofSeconds(10);

    private OrphanPostgres() {
    }

    /**
     * Stops the orphan postmaster of {@code pgData}, if there is one.
     *
     * @return the pid of the postmaster stopped, or empty when none was running
     */
    public static Optional<Long> stopIfRunning(Path pgData) {
        Optional<ProcessHandle> found = find(pgData);
        if (found.isEmpty()) {
            return Optional.empty();
        }
        ProcessHandle postmaster = found.get();
        if (embeddingLockHeld(pgData)) {
            // A live JVM embeds this PostgreSQL (an `outrun dev` from before outrun-dev.pid
            // existed, or another program): not an orphan.
            throw new DevDirException("the PostgreSQL in " + pgData + " (pid " + postmaster.pid()
                    + ") belongs to a running process that holds " + pgData.resolve(EMBEDDING_LOCK)
                    + "; stop that process first, or give this one another --data-dir");
        }
        // Its backends, to wait for too: a new postmaster refuses to start while the old one's
        // shared memory is still attached by any of them.
        List<ProcessHandle> children = postmaster.children().collect(Collectors.toList());
        signal(postmaster, "INT");
        if (!exited(postmaster, FAST_SHUTDOWN_WAIT)) {
            // ProcessHandle checks the start time as well as the pid, so this can never hit a
            // process that merely reused the number.
            postmaster.destroyForcibly();
            if (!exited(postmaster, KILL_WAIT)) {
                throw new DevDirException("a PostgreSQL left running on " + pgData + " by an earlier `outrun dev` (pid "
                        + postmaster.pid() + ") does not stop; stop it by hand (kill -9 " + postmaster.pid() + ")");
            }
        }
        for (ProcessHandle child : children) {
            if (!exited(child, KILL_WAIT)) {
                child.destroyForcibly();
                exited(child, KILL_WAIT);
            }
        }
        return Optional.of(postmaster.pid());
    }

    /** The live postmaster that {@code postmaster.pid} names, if it really serves {@code pgData}. */
    static Optional<ProcessHandle> find(Path pgData) {
        Path pidFile = pgData.resolve("postmaster.pid");
        long pid;
        try {
            if (!Files.isRegularFile(pidFile)) {
                return Optional.empty();
            }
            // First line: the postmaster's pid (PostgreSQL's miscadmin.h, LOCK_FILE_LINE_PID).
            List<String> lines = Files.readAllLines(pidFile);
            if (lines.isEmpty()) {
                return Optional.empty();
            }
            pid = Long.parseLong(lines.get(0).strip());
        } catch (IOException | NumberFormatException e) {
            // Unreadable or half-written: PostgreSQL itself decides at start whether it is stale.
            return Optional.empty();
        }
        return ProcessHandle.of(pid).filter(ProcessHandle::isAlive).filter(p -> servesDirectory(p, pgData));
    }

    /** Whether a live process (this one included) holds the embedding library's lock on {@code pgData}. */
    static boolean embeddingLockHeld(Path pgData) {
        Path file = pgData.resolve(EMBEDDING_LOCK);
        if (!Files.isRegularFile(file)) {
            return false;
        }
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            FileLock lock = channel.tryLock();
            if (lock == null) {
                return true;
            }
            lock.release();
            return false;
        } catch (OverlappingFileLockException sameJvm) {
            return true;
        } catch (IOException e) {
            // Cannot tell: PostgreSQL's own start refuses a data directory in use.
            return false;
        }
    }

    /** A postgres process started on this data directory (not a reused pid, not another cluster). */
    private static boolean servesDirectory(ProcessHandle p, Path pgData) {
        ProcessHandle.Info info = p.info();
        boolean postgres = info.command().map(c -> Path.of(c).getFileName().toString().equals("postgres")).orElse(false);
        if (!postgres) {
            return false;
        }
        String dir = pgData.toAbsolutePath().normalize().toString();
        return info.arguments().map(args -> List.of(args).contains(dir))
                .or(() -> info.commandLine().map(line -> line.contains(dir)))
                .orElse(false);
    }

    /** Sends a signal by name with the system's {@code kill}; SIGTERM through the JDK if that fails. */
    private static void signal(ProcessHandle p, String name) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + name, String.valueOf(p.pid()))
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (kill.waitFor(5, TimeUnit.SECONDS) && kill.exitValue() == 0) {
                return;
            }
        } catch (IOException e) {
            // no kill(1) on this system
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // SIGTERM is PostgreSQL's "smart" shutdown: it waits for clients, and the dead JVM had
        // the only ones, so it ends as well, only later.
        p.destroy();
    }

    private static boolean exited(ProcessHandle p, Duration within) {
        CompletableFuture<ProcessHandle> exit = p.onExit();
        try {
            exit.get(within.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            return !p.isAlive();
        } catch (ExecutionException e) {
            return !p.isAlive();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !p.isAlive();
        }
    }
}
