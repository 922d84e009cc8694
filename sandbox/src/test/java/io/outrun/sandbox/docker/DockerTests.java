package io.outrun.sandbox.docker;

import static org.assertj.core.api.Assertions.fail;

import org.junit.jupiter.api.Assumptions;

/**
 * Decides what a Docker test does when the engine or the sandbox image is missing: under
 * {@code CI=true} it fails (CI must prove the sandbox), elsewhere it is skipped with the reason.
 */
public final class DockerTests {

    private DockerTests() {
    }

    /** Returns when the default engine answers and the default image exists; fails or skips otherwise. */
    public static void requireDocker() {
        String problem = problem();
        if (problem == null) {
            return;
        }
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            fail("Docker tests cannot run under CI=true: " + problem);
        }
        Assumptions.abort("skipping Docker tests (they fail instead under CI=true): " + problem);
    }

    private static String problem() {
        DockerSandboxConfig config = DockerSandboxConfig.defaults("it-probe");
        try (DockerClients clients = new DockerClients(config)) {
            try {
                clients.control.pingCmd().exec();
            } catch (RuntimeException e) {
                return "the Docker engine at " + config.dockerHost() + " does not answer (" + e.getMessage() + ")";
            }
            try {
                clients.control.inspectImageCmd(config.image()).exec();
            } catch (RuntimeException e) {
                return "image " + config.image() + " is missing; build it with sandbox/image/build.sh";
            }
            return null;
        }
    }
}
