package io.outrun.sandbox.docker;

import com.github.dockerjava.api.exception.NotFoundException;
import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.SandboxException;
import io.outrun.sandbox.SandboxUnavailableException;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;

/**
 * The checks of {@link DockerSandbox#verify()}, in the order a node start needs them: engine
 * reachable, image present, and one real run of the image the way every run goes (user 10001,
 * command through stdin, bash and head inside).
 */
final class EngineCheck {

    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(30);

    private final DockerClients clients;
    private final DockerSandboxConfig config;
    private final Function<RunSpec, Run> starter;

    EngineCheck(DockerClients clients, DockerSandboxConfig config, Function<RunSpec, Run> starter) {
        this.clients = clients;
        this.config = config;
        this.starter = starter;
    }

    static String missingImageMessage(String image) {
        return "the sandbox image " + image + " is missing from the Docker engine; build it with sandbox/image/build.sh"
                + " (no registry is pulled from)";
    }

    void verify() {
        try {
            clients.control.pingCmd().exec();
        } catch (RuntimeException e) {
            throw new SandboxUnavailableException("the Docker engine at " + config.dockerHost()
                    + " is unreachable (is dockerd running, and may this user use its socket?): " + rootMessage(e), e);
        }
        try {
            clients.control.inspectImageCmd(config.image()).exec();
        } catch (NotFoundException e) {
            throw new SandboxUnavailableException(missingImageMessage(config.image()), e);
        }
        probe();
    }

    private void probe() {
        RunSpec spec = new RunSpec(UUID.randomUUID(), 0, 0, config.nodeId(), config.nodeId(),
                "command -v head >/dev/null && command -v stat >/dev/null", config.image(), null, null,
                PROBE_TIMEOUT, 64 * 1024, null, null);
        Optional<Exit> exit;
        String stderr;
        try (Run run = starter.apply(spec)) {
            exit = run.awaitExit(PROBE_TIMEOUT.plusSeconds(10));
            stderr = run.stderr().text().strip();
        } catch (SandboxException e) {
            String message = rootMessage(e).toLowerCase(Locale.ROOT);
            if (message.contains("no such file") || message.contains("executable file not found")) {
                throw new SandboxUnavailableException("the sandbox image " + config.image()
                        + " has no /bin/bash; every command runs through bash", e);
            }
            throw new SandboxUnavailableException("cannot run a container of " + config.image() + ": " + rootMessage(e), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxUnavailableException("interrupted while probing the sandbox image " + config.image(), e);
        }
        int code = exit.map(Exit::exitCode).orElse(-1);
        if (code == 127 && stderr.contains("/bin/bash")) {
            // docker-init (PID 1) reports that it could not exec the entrypoint.
            throw new SandboxUnavailableException("the sandbox image " + config.image()
                    + " has no /bin/bash; every command runs through bash (" + stderr + ")");
        }
        if (code != 0) {
            throw new SandboxUnavailableException("the sandbox image " + config.image()
                    + " cannot run commands the way the sandbox sends them (needs bash, head and stat on PATH,"
                    + " user 10001): probe exit " + code + (stderr.isEmpty() ? "" : ", stderr: " + stderr));
        }
    }

    private static String rootMessage(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String message = root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
        return message.strip();
    }
}
