package io.outrun.sandbox.docker;

import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.exception.ConflictException;
import com.github.dockerjava.api.exception.NotFoundException;
import io.outrun.model.output.Captured;
import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.SandboxException;
import io.outrun.sandbox.capture.BoundedCapture;
import io.outrun.sandbox.capture.FullOutput;
import io.outrun.sandbox.files.WorkdirVisitor;
import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One started container: its bounded output, its exit, its deadline.
 *
 * <p>The exit comes from the engine's wait stream; the deadline is enforced by
 * {@link #awaitExit}, like the process backend: whoever waits past it kills the container.
 */
final class DockerRun implements Run {

    private static final Logger log = LoggerFactory.getLogger(DockerRun.class);

    /** How long a killed container may take to be reported stopped. */
    private static final long STOP_GRACE_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** How long to let the output stream deliver its last bytes once the container stopped. */
    private static final long DRAIN_MILLIS = 2000;

    /** 128 + SIGKILL, what the engine reports for a killed container. */
    private static final int KILLED_EXIT_CODE = 137;

    /** How often a run whose engine is away asks whether it is back. */
    private static final long RECONNECT_MILLIS = 500;

    private final DockerClients clients;
    private final EngineWatch watch;
    private final String host;
    private final long engineGraceNanos;
    private final String containerId;
    private volatile OutputCallback output;
    private final long deadlineNanos;
    private final Consumer<DockerRun> onClose;
    /** {@link EngineWatch#losses()} when the run started: a loss since means nobody watched throughout. */
    private final long lossesAtStart;
    private volatile ExitCallback exit;
    /** When the engine stopped answering this run's calls (System.nanoTime), 0 while it answers. */
    private volatile long awaySinceNanos;
    /** False once the exit could only be learnt by asking the engine after its streams were cut. */
    private volatile boolean endSeenLive = true;
    /** What ended the run from outside (see {@link Exit#lostTo}), null when the command or Outrun did. */
    private volatile String lostTo;
    private volatile Integer exitCode;
    private volatile boolean timedOut;
    /**
     * A kill was asked of the engine (set before the call: the run may die before the call
     * returns), or close() removed the container. Whether it was killed is then decided from how
     * it ended: a run that exits by itself first keeps its own exit.
     */
    private volatile boolean killAsked;
    private volatile boolean oomKilled;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** The workdir volume when the run carries files in or out (removed after the container), else null. */
    private volatile WorkdirVolume workdir;

    /** The owner's bytes for the command (a run submitted with stdin open), else null. */
    private volatile StdinFrames stdin;

    void stdin(StdinFrames frames) {
        this.stdin = frames;
    }

    @Override
    public void writeStdin(byte[] bytes) throws IOException {
        StdinFrames in = stdin;
        if (in == null) {
            throw new IOException("this run's stdin is /dev/null: it was not submitted with stdin open");
        }
        in.send(bytes);
    }

    @Override
    public void closeStdin() {
        StdinFrames in = stdin;
        if (in != null) {
            in.end();
        }
    }

    DockerRun(DockerClients clients, EngineWatch watch, DockerSandboxConfig config, String containerId,
              OutputCallback output, Duration timeout, long lossesAtStart, Consumer<DockerRun> onClose) {
        this.clients = clients;
        this.watch = watch;
        this.host = config.dockerHost();
        this.engineGraceNanos = saturatedNanos(config.engineGrace());
        this.lossesAtStart = lossesAtStart;
        this.containerId = containerId;
        this.output = output;
        this.deadlineNanos = System.nanoTime() + saturatedNanos(timeout);
        this.onClose = onClose;
        this.exit = watchExit();
    }

    String containerId() {
        return containerId;
    }

    void keepWorkdir(WorkdirVolume volume) {
        this.workdir = volume;
    }

    @Override
    public void readWorkdir(String path, WorkdirVisitor visitor) throws IOException {
        if (workdir == null) {
            throw new UnsupportedOperationException("the spec did not ask to keep the workdir of container " + containerId);
        }
        workdir.read(path, visitor);
    }

    @Override
    public Optional<FullOutput.Spooled> fullOutput(int stream) {
        return (stream == 1 ? output.stdout : output.stderr).finishFull();
    }

    private ExitCallback watchExit() {
        return clients.streams.waitContainerCmd(containerId).exec(new ExitCallback());
    }

    @Override
    public Captured stdout() {
        return output.stdout.snapshot();
    }

    @Override
    public void noteStderr(String text) {
        output.stderr.note(text);
    }

    @Override
    public Captured stderr() {
        return output.stderr.snapshot();
    }

    @Override
    public BoundedCapture.Since keptSince(int stream, long from) {
        return (stream == 1 ? output.stdout : output.stderr).keptSince(from);
    }

    @Override
    public Optional<Exit> awaitExit(Duration wait) throws InterruptedException {
        long now = System.nanoTime();
        long callerEnd = now + saturatedNanos(wait);
        long waitEnd = now + Math.min(saturatedNanos(wait), Math.max(0, deadlineNanos - now));
        while (exitCode == null) {
            if (awaySinceNanos != 0) {
                // The engine stopped answering: ask again now and then until it answers (it may
                // have kept the container running: live-restore) or the grace runs out.
                if (reconnect()) {
                    continue;
                }
                if (System.nanoTime() - awaySinceNanos > engineGraceNanos) {
                    exitCode = -1;
                    lostTo = "the Docker engine at " + host + " stopped answering while the command ran and did not"
                            + " answer again within " + TimeUnit.NANOSECONDS.toSeconds(engineGraceNanos) + " s";
                    break;
                }
                long left = callerEnd - System.nanoTime();
                if (left <= 0) {
                    return Optional.empty();
                }
                Thread.sleep(Math.max(1, Math.min(RECONNECT_MILLIS, TimeUnit.NANOSECONDS.toMillis(left))));
                continue;
            }
            if (exit.awaitEnded(Math.max(0, waitEnd - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                settleExit();
                continue;
            }
            if (System.nanoTime() - deadlineNanos < 0) {
                return Optional.empty();
            }
            if (timedOut) {
                throw new SandboxException("container " + containerId
                        + " was killed at its timeout but was not reported stopped within 10 s");
            }
            timedOut = true;
            kill();
            waitEnd = System.nanoTime() + STOP_GRACE_NANOS;
        }
        output.awaitEnded(DRAIN_MILLIS, TimeUnit.MILLISECONDS);
        if (lostTo == null && !killAsked && !timedOut && !oomKilled) {
            // Outrun did not end it: ask the engine's events whether someone else did.
            EngineWatch.Verdict verdict = watch.verdict(containerId, exitCode, lossesAtStart, endSeenLive, host);
            lostTo = verdict.lost() ? verdict.why() : null;
        }
        if (lostTo != null) {
            log.warn("container {} was ended from outside (exit {}): {}", containerId, exitCode, lostTo);
            return Optional.of(Exit.lost(exitCode, lostTo));
        }
        // Killed only if it really died of SIGKILL (not for memory) after our kill reached the
        // engine: a command that exited by itself before the kill landed keeps its own exit.
        boolean killed = killAsked && !timedOut && !oomKilled && exitCode == KILLED_EXIT_CODE;
        // The engine's oom event also comes when the kernel killed a child the command survived.
        return Optional.of(new Exit(exitCode, timedOut, killed, oomKilled).withMemoryKill(watch.sawOom(containerId)));
    }

    /** The wait stream ended: take its code, or ask the engine when the stream broke without one. */
    private void settleExit() throws InterruptedException {
        Integer code = exit.statusCode();
        if (code != null) {
            if (code == KILLED_EXIT_CODE) {
                oomKilled = engineSaysOom();
            }
            exitCode = code;
            return;
        }
        if (closed.get()) {
            // close() ended the streams and removed the container: it was killed.
            exitCode = KILLED_EXIT_CODE;
            return;
        }
        InspectContainerResponse.ContainerState state;
        try {
            state = clients.control.inspectContainerCmd(containerId).exec().getState();
        } catch (NotFoundException e) {
            removedOutside();
            return;
        } catch (RuntimeException e) {
            // The engine is away (restarting, upgrading, crashed): the run may still be alive
            // (live-restore); awaitExit asks again until it answers or the grace runs out.
            awaySinceNanos = System.nanoTime();
            endSeenLive = false;
            log.warn("lost the Docker engine at {} while container {} runs ({}); waiting up to {} s for it",
                    host, containerId, e.getMessage(), TimeUnit.NANOSECONDS.toSeconds(engineGraceNanos));
            return;
        }
        if (Boolean.TRUE.equals(state.getRunning())) {
            // Both streams cut while the container runs: the engine went away and is back already
            // (live-restore keeps containers through a quick restart). The attach is cut at the
            // same moment as the wait, though seen on another thread: give it a second to show.
            if (output.awaitEnded(1000, TimeUnit.MILLISECONDS)) {
                log.info("the Docker engine restarted under container {}, which still runs (live-restore): re-attaching",
                        containerId);
                reattach("");
                return;
            }
            log.warn("wait stream of container {} broke while it runs; watching again", containerId);
            Thread.sleep(100); // an engine that drops every wait at once must not be hammered
            exit = watchExit();
        } else {
            takeStoppedState(state);
        }
    }

    /**
     * The engine away, asks again: false while it does not answer. Once it does, a container that
     * kept running (live-restore) is re-attached and watched again in the same run, its output
     * marked with a gap; a stopped one gives its exit.
     */
    private boolean reconnect() {
        InspectContainerResponse.ContainerState state;
        try {
            state = clients.control.inspectContainerCmd(containerId).exec().getState();
        } catch (NotFoundException e) {
            awaySinceNanos = 0;
            removedOutside();
            return true;
        } catch (RuntimeException e) {
            return false;
        }
        long awaySeconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - awaySinceNanos);
        awaySinceNanos = 0;
        if (Boolean.TRUE.equals(state.getRunning())) {
            log.info("the Docker engine answers again after {} s and container {} still runs (live-restore):"
                    + " re-attaching", awaySeconds, containerId);
            reattach(" for about " + awaySeconds + " s");
        } else {
            log.info("the Docker engine answers again after {} s; container {} has stopped", awaySeconds, containerId);
            takeStoppedState(state);
        }
        return true;
    }

    /**
     * Attaches again (new output only: there is no log to replay) and arms a fresh wait. A run
     * with stdin open has lost it: the old attach's end closed the container's stdin (stdin once),
     * so the command read end of file; writes from now on fail instead of vanishing.
     */
    private void reattach(String awayFor) {
        StdinFrames in = stdin;
        if (in != null) {
            in.abort();
            log.warn("container {}: its stdin ended with the engine's restart; what is written to it from now on is"
                    + " not delivered to this attempt", containerId);
        }
        OutputCallback before = output;
        before.closeQuietly();
        String marker = "\n[outrun: the Docker engine was away" + awayFor
                + "; output printed meanwhile may be missing here]\n";
        before.stdout.noteGap(marker);
        before.stderr.noteGap(marker);
        try {
            output = clients.streams.attachContainerCmd(containerId)
                    .withStdOut(true)
                    .withStdErr(true)
                    .withFollowStream(true)
                    .withLogs(false)
                    .exec(new OutputCallback(before.stdout, before.stderr));
            exit = watchExit();
            endSeenLive = true; // watched again: its end will be seen as it happens
        } catch (RuntimeException e) {
            // Gone again at once: the next await sees the broken wait and asks again.
            log.warn("re-attaching to container {} failed ({})", containerId, e.toString());
            awaySinceNanos = System.nanoTime();
        }
    }

    private void takeStoppedState(InspectContainerResponse.ContainerState state) {
        Long stateCode = state.getExitCodeLong();
        oomKilled = Boolean.TRUE.equals(state.getOOMKilled());
        exitCode = stateCode == null ? -1 : stateCode.intValue();
    }

    /** The container vanished before its exit was seen: Outrun's doing only if it asked a kill. */
    private void removedOutside() {
        exitCode = KILLED_EXIT_CODE;
        if (!killAsked) {
            lostTo = "the container was removed outside Outrun (a `docker rm -f` or a prune) before its exit was seen";
        }
    }

    /** The engine's own OOM flag; false when it cannot tell (the container is already gone). */
    private boolean engineSaysOom() {
        try {
            return Boolean.TRUE.equals(clients.control.inspectContainerCmd(containerId).exec().getState().getOOMKilled());
        } catch (RuntimeException e) {
            log.debug("cannot inspect container {} for its OOM flag: {}", containerId, e.toString());
            return false;
        }
    }

    @Override
    public boolean kill() {
        if (exitCode != null || closed.get()) {
            return true;
        }
        killAsked = true;
        try {
            // SIGKILL to docker-init, PID 1 of the container: the kernel then kills every process in it.
            clients.control.killContainerCmd(containerId).exec();
            return true;
        } catch (NotFoundException | ConflictException e) {
            log.debug("container {} was no longer running when killed", containerId);
            return true;
        } catch (RuntimeException e) {
            log.warn("killing container {} failed ({}); the kill is sent again", containerId, e.toString());
            return false;
        }
    }

    @Override
    public void close() {
        if (exitCode == null) {
            killAsked = true;
        }
        StdinFrames in = stdin;
        if (in != null) {
            in.abort();
        }
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            output.closeQuietly();
            exit.closeQuietly();
            // Force-removal kills a still-running container first.
            clients.control.removeContainerCmd(containerId).withForce(true).withRemoveVolumes(true).exec();
        } catch (NotFoundException e) {
            log.debug("container {} was already removed", containerId);
        } catch (RuntimeException e) {
            if (watch.connected()) {
                log.warn("removing container {} failed; removeLeftovers will remove it", containerId, e);
            } else {
                // Expected while the engine is away: not worth a stack trace.
                log.info("the Docker engine does not answer; the leftover clean-up removes container {} once it does",
                        containerId);
            }
        } finally {
            watch.untrack(containerId);
            if (workdir != null) {
                workdir.close();
            }
            output.stdout.discardFull();
            output.stderr.discardFull();
            onClose.accept(this);
        }
    }

    private static long saturatedNanos(Duration duration) {
        try {
            return Math.max(0, duration.toNanos());
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE / 2;
        }
    }
}
