package io.outrun.sandbox.docker;

import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.exception.ConflictException;
import com.github.dockerjava.api.exception.NotFoundException;
import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.SandboxException;
import io.outrun.sandbox.capture.Captured;
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

    private final DockerClients clients;
    private final String containerId;
    private final OutputCallback output;
    private final long deadlineNanos;
    private final Consumer<DockerRun> onClose;
    private volatile ExitCallback exit;
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

    DockerRun(DockerClients clients, String containerId, OutputCallback output, Duration timeout,
              Consumer<DockerRun> onClose) {
        this.clients = clients;
        this.containerId = containerId;
        this.output = output;
        this.deadlineNanos = System.nanoTime() + saturatedNanos(timeout);
        this.onClose = onClose;
        this.exit = watchExit();
    }

    String containerId() {
        return containerId;
    }

    private ExitCallback watchExit() {
        return clients.streams.waitContainerCmd(containerId).exec(new ExitCallback());
    }

    @Override
    public Captured stdout() {
        return output.stdout.snapshot();
    }

    @Override
    public Captured stderr() {
        return output.stderr.snapshot();
    }

    @Override
    public io.outrun.sandbox.capture.BoundedCapture.Since keptSince(int stream, long from) {
        return (stream == 1 ? output.stdout : output.stderr).keptSince(from);
    }

    @Override
    public Optional<Exit> awaitExit(Duration wait) throws InterruptedException {
        long now = System.nanoTime();
        long waitEnd = now + Math.min(saturatedNanos(wait), Math.max(0, deadlineNanos - now));
        while (exitCode == null) {
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
        // Killed only if it really died of SIGKILL (not for memory) after our kill reached the
        // engine: a command that exited by itself before the kill landed keeps its own exit.
        boolean killed = killAsked && !timedOut && !oomKilled && exitCode == KILLED_EXIT_CODE;
        return Optional.of(new Exit(exitCode, timedOut, killed, oomKilled));
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
            throw new SandboxException("container " + containerId + " disappeared before its exit was seen", e);
        } catch (RuntimeException e) {
            throw new SandboxException("lost the Docker engine while waiting for container " + containerId
                    + ": " + e.getMessage(), e);
        }
        if (Boolean.TRUE.equals(state.getRunning())) {
            log.warn("wait stream of container {} broke while it runs; watching again", containerId);
            Thread.sleep(100); // an engine that drops every wait at once must not be hammered
            exit = watchExit();
        } else {
            Long stateCode = state.getExitCodeLong();
            oomKilled = Boolean.TRUE.equals(state.getOOMKilled());
            exitCode = stateCode == null ? -1 : stateCode.intValue();
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
            log.warn("removing container {} failed; removeLeftovers will remove it", containerId, e);
        } finally {
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
