package io.outrun.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * A private engine leaves the host's network alone: the host engine's default bridge
 * ({@code docker0}) is still there after a private engine started, restarted, was killed and
 * closed. A private engine in the host's network namespace with {@code --bridge=none} deletes it
 * at start (this test then fails at its first check), and the host engine cannot build or run on
 * its default bridge until it restarts.
 */
class PrivateDockerdIT {

    private static final Path HOST_BRIDGE = Path.of("/sys/class/net/docker0");

    @Test
    void theHostEnginesDefaultBridgeSurvivesAPrivateEngine() throws Exception {
        Requirements.docker();
        Requirements.require("the host engine's default bridge docker0",
                Files.exists(HOST_BRIDGE) ? null : "the host has no docker0 (start the host's dockerd with its default bridge)");
        try (PrivateDockerd engine = PrivateDockerd.start(false)) {
            assertThat(HOST_BRIDGE).as("docker0 after a private engine's start").exists();
            assertThat(engine.docker("run --rm --network none " + Requirements.SANDBOX_IMAGE + " echo ran").strip())
                    .as("a container on the private engine").isEqualTo("ran");
            engine.restart();
            assertThat(HOST_BRIDGE).as("docker0 after a private engine's restart").exists();
            engine.killEngine();
            engine.awaitContainerdGone(java.time.Duration.ofSeconds(20));
            engine.startEngine();
            assertThat(HOST_BRIDGE).as("docker0 after a private engine's crash and start").exists();
        }
        assertThat(HOST_BRIDGE).as("docker0 after a private engine's close").exists();
    }
}
