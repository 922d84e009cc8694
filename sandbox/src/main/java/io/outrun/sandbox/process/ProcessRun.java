package io.outrun.sandbox.process;

import io.outrun.model.output.Captured;
import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.capture.BoundedCapture;
import io.outrun.sandbox.capture.FullOutput;
import io.outrun.sandbox.capture.SecretMask;
import io.outrun.sandbox.files.HostWorkdir;
import io.outrun.sandbox.files.WorkdirVisitor;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/** One host process tree, its bounded output, and its deadline. */
final class ProcessRun implements Run {

    private final Process process;
    private final Path script;
    private final Path pidFile;
    private final BoundedCapture stdout;
    private final BoundedCapture stderr;
    private final Pump stdoutPump;
    private final Pump stderrPump;
    private final long deadlineNanos;
    private final NodeWatchdog watchdog;
    private volatile boolean timedOut;
    /** Set before the signal: the run may die before the call returns. */
    private volatile boolean killAsked;
    /** Whether the command's stdin is the pipe of {@link #writeStdin} (else /dev/null). */
    private final boolean stdinOpen;

    /** Where the command runs (null: the worker's own directory) and the directory this run made for it (null: none). */
    private final Path workdir;
    private final Path ownWorkdir;

    /** The spare that took this run (null: spawned): its directories go with the run. */
    private final SpareShells.Spare spare;

    ProcessRun(RunSpec spec, Process process, Path script, Path pidFile, NodeWatchdog watchdog, Path workdir, Path ownWorkdir,
               SpareShells.Spare spare) {
        this.spare = spare;
        this.workdir = workdir;
        this.ownWorkdir = ownWorkdir;
        this.process = process;
        this.stdinOpen = spec.stdin().open();
        this.watchdog = watchdog;
        this.script = script;
        this.pidFile = pidFile;
        this.stdout = capture(spec, "-stdout-");
        this.stderr = capture(spec, "-stderr-");
        this.deadlineNanos = System.nanoTime() + spec.timeout().toNanos();
        this.stdoutPump = new Pump(process.getInputStream(), stdout, spec, "stdout");
        this.stderrPump = new Pump(process.getErrorStream(), stderr, spec, "stderr");
    }

    private static BoundedCapture capture(RunSpec spec, String stream) {
        return new BoundedCapture(spec.maxOutputBytes(), spec.files().fullOutputCap() <= 0 ? null
                : new FullOutput(spec.files().spoolDir(), spec.executionId() + stream,
                        spec.files().fullOutputCap()), SecretMask.of(spec.secrets()));
    }

    @Override
    public void readWorkdir(String path, WorkdirVisitor visitor) throws IOException {
        if (workdir == null) {
            throw new UnsupportedOperationException("this run has no workdir of its own to read back");
        }
        HostWorkdir.visit(workdir, path, visitor);
    }

    @Override
    public Optional<FullOutput.Spooled> fullOutput(int stream) {
        try {
            (stream == 1 ? stdoutPump : stderrPump).await(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return (stream == 1 ? stdout : stderr).finishFull();
    }

    static void deleteTree(Path dir) {
        if (dir == null) {
            return;
        }
        try (var paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // A directory left in the scratch directory is harmless.
        }
    }

    /**
     * Pump threads are reused across runs: starting two threads per run was a millisecond or
     * more of a short run's way to its first instruction on a busy machine (they start while
     * the command does), and CPU that every run paid.
     */
    private static final ExecutorService PUMPS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "outrun-pump");
        t.setDaemon(true);
        return t;
    });

    /** Copies one stream of the run into its capture until end of file. */
    private static final class Pump {
        private final CountDownLatch done = new CountDownLatch(1);

        Pump(InputStream in, BoundedCapture capture, RunSpec spec, String stream) {
            PUMPS.execute(() -> {
                Thread self = Thread.currentThread();
                self.setName("outrun-" + stream + "-" + spec.executionId());
                byte[] buffer = new byte[64 * 1024];
                try (in) {
                    int n;
                    while ((n = in.read(buffer)) >= 0) {
                        capture.append(buffer, 0, n);
                    }
                } catch (IOException ignored) {
                    // The process was killed or closed: what was read is kept.
                } finally {
                    capture.endOfStream();
                    self.setName("outrun-pump");
                    done.countDown();
                }
            });
        }

        /** Waits up to {@code ms} for the stream's end (and what the pipe still held). */
        void await(long ms) throws InterruptedException {
            done.await(ms, TimeUnit.MILLISECONDS);
        }
    }

    @Override
    public Captured stdout() {
        return stdout.snapshot();
    }

    @Override
    public void noteStderr(String text) {
        stderr.note(text);
    }

    @Override
    public Captured stderr() {
        return stderr.snapshot();
    }

    @Override
    public BoundedCapture.Since keptSince(int stream, long from) {
        return (stream == 1 ? stdout : stderr).keptSince(from);
    }

    @Override
    public Optional<Exit> awaitExit(Duration wait) throws InterruptedException {
        long remaining = deadlineNanos - System.nanoTime();
        long waitNanos = Math.max(0, Math.min(wait.toNanos(), remaining));
        if (!process.waitFor(waitNanos, TimeUnit.NANOSECONDS)) {
            if (System.nanoTime() - deadlineNanos < 0) {
                return Optional.empty();
            }
            timedOut = true;
            kill();
            process.waitFor();
        }
        // Let the pumps drain what the pipes still hold before the exit is reported.
        stdoutPump.await(2000);
        stderrPump.await(2000);
        int code = process.exitValue();
        // Killed only if it really died of SIGKILL after our kill: an exit that came first stands.
        return Optional.of(new Exit(code, timedOut, killAsked && !timedOut && code == Exit.SIGKILL_EXIT, false));
    }

    @Override
    public void writeStdin(byte[] bytes) throws IOException {
        if (!stdinOpen) {
            throw new IOException("this run's stdin is /dev/null: it was not submitted with stdin open");
        }
        OutputStream in = process.getOutputStream();
        in.write(bytes);
        in.flush();
    }

    @Override
    public void closeStdin() throws IOException {
        if (stdinOpen) {
            process.getOutputStream().close();
        }
    }

    /**
     * Kills the whole process group now; once bash has exited, its background children may live
     * on in the group, and the node's watchdog kills them.
     */
    @Override
    public boolean kill() {
        if (!process.isAlive()) {
            watchdog.reap(process.pid());
            return true;
        }
        killAsked = true;
        killGroup(process.pid());
        process.destroyForcibly();
        return true;
    }

    /** setsid made the run's bash the leader of its own process group: signal the whole group. */
    static void killGroup(long pgid) {
        try {
            new ProcessBuilder("kill", "-KILL", "--", "-" + pgid)
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start().waitFor(2, TimeUnit.SECONDS);
        } catch (IOException e) {
            // Nothing to kill, or no kill binary: the caller also kills the leader directly.
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        kill();
        try {
            Files.deleteIfExists(script);
            Files.deleteIfExists(SpareHandOff.goFile(script));
            Files.deleteIfExists(ProcessSandbox.ttyCommand(script));
            Files.deleteIfExists(pidFile);
        } catch (IOException ignored) {
            // A temp file left in the scratch directory is harmless.
        }
        stdout.discardFull();
        stderr.discardFull();
        deleteTree(ownWorkdir);
        if (spare != null) {
            spare.removeDirs();
        }
    }
}
