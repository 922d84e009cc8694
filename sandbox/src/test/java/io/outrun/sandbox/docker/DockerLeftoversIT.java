package io.outrun.sandbox.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.dockerjava.api.model.Container;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxUnavailableException;
import io.outrun.testing.Requirements;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Clean-up of runs a dead worker never closed, and the start-up checks of {@code verify()}. */
class DockerLeftoversIT {

    @BeforeAll
    static void requireDocker() {
        Requirements.docker();
    }

    static String node() {
        return "it-left-" + UUID.randomUUID().toString().substring(0, 8);
    }

    static RunSpec sleeper(String node) {
        return new RunSpec(UUID.randomUUID(), 3, 3, node, node, "sleep 300", null, null, Map.of(), Duration.ofMinutes(10),
                4096, null, null);
    }

    @Test
    void removesContainersOfRunsNoLongerCurrentAndKeepsCurrentOnes() {
        String node = node();
        RunSpec stale = sleeper(node);
        RunSpec current = sleeper(node);
        // A worker that dies: its runs are never closed, its sandbox never closed.
        DockerSandbox dead = new DockerSandbox(DockerSandboxConfig.defaults(node));
        dead.start(stale);
        Run currentRun = dead.start(current);
        assertThat(DockerSandboxIT.outrunContainers(node)).hasSize(2);

        try (DockerSandbox restarted = new DockerSandbox(DockerSandboxConfig.defaults(node));
             DockerSandbox otherNode = new DockerSandbox(DockerSandboxConfig.defaults(node()))) {
            assertThat(otherNode.removeLeftovers((execution, attempt) -> false)).as("another node's leftovers").isZero();

            int removed = restarted.removeLeftovers((execution, attempt) ->
                    execution.equals(current.executionId()) && attempt == current.attempt());

            assertThat(removed).isEqualTo(1);
            List<Container> remaining = DockerSandboxIT.outrunContainers(node);
            assertThat(remaining).hasSize(1);
            assertThat(remaining.get(0).getLabels())
                    .containsEntry("outrun.execution", current.executionId().toString())
                    .containsEntry("outrun.attempt", "3")
                    .containsEntry("outrun.node", node);
        } finally {
            currentRun.close();
            dead.close();
        }
        assertThat(DockerSandboxIT.outrunContainers(node)).isEmpty();
    }

    @Test
    void removesTheRunningContainerOfASigkilledWorker() throws Exception {
        String node = node();
        Process worker = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), AbandonedWorker.class.getName(), node)
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try {
            String line = new BufferedReader(new InputStreamReader(worker.getInputStream(), StandardCharsets.UTF_8)).readLine();
            assertThat(line).as("the worker's first line").startsWith("started ");
        } finally {
            worker.destroyForcibly(); // SIGKILL: no shutdown hook, no close
            worker.waitFor(30, TimeUnit.SECONDS);
        }
        List<Container> left = DockerSandboxIT.outrunContainers(node);
        assertThat(left).as("the killed worker's container keeps running").hasSize(1);
        assertThat(left.get(0).getState()).isEqualTo("running");

        try (DockerSandbox restarted = new DockerSandbox(DockerSandboxConfig.defaults(node))) {
            assertThat(restarted.removeLeftovers((execution, attempt) -> false)).isEqualTo(1);
        }
        assertThat(DockerSandboxIT.outrunContainers(node)).isEmpty();
    }

    @Test
    void removesThePooledContainersOfASigkilledWorkerOnceItsProcessIsGone() throws Exception {
        String node = node();
        String incarnation = node + "/dead";
        Process worker = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), AbandonedWorker.class.getName(), node, incarnation)
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try {
            String line = new BufferedReader(new InputStreamReader(worker.getInputStream(), StandardCharsets.UTF_8)).readLine();
            assertThat(line).as("the worker's first line").startsWith("started ");
        } finally {
            worker.destroyForcibly(); // SIGKILL: no shutdown hook, no close
            worker.waitFor(30, TimeUnit.SECONDS);
        }
        // One pooled container runs the abandoned run, at least one more waits (a refill may be on its way).
        List<Container> left = DockerSandboxIT.outrunContainers(node);
        assertThat(left).hasSizeGreaterThanOrEqualTo(2)
                .allSatisfy(c -> assertThat(c.getLabels()).containsEntry("outrun.pool", "1")
                        .containsEntry("outrun.incarnation", incarnation));

        Sandbox.LeftoverPolicy deadProcess = new Sandbox.LeftoverPolicy() {
            @Override
            public boolean isCurrent(UUID executionId, long epoch) {
                return false;
            }

            @Override
            public boolean incarnationLive(String inc) {
                return !inc.equals(incarnation);
            }
        };
        try (DockerSandbox restarted = new DockerSandbox(DockerSandboxConfig.defaults(node))) {
            // While its process is deemed alive, its pool stays (the default policy keeps it).
            assertThat(restarted.removeLeftovers((execution, epoch) -> false)).isZero();
            assertThat(restarted.removeLeftovers(deadProcess)).isEqualTo(left.size());
        }
        assertThat(DockerSandboxIT.outrunContainers(node)).isEmpty();
    }

    @Test
    void engineScopeRemovesLeftoversOfANodeThatRestartedUnderAnotherId() {
        String deadNode = node();
        RunSpec stale = sleeper(deadNode);
        DockerSandbox dead = new DockerSandbox(DockerSandboxConfig.defaults(deadNode));
        dead.start(stale);
        DockerSandboxConfig restarted = DockerSandboxConfig.defaults(node())
                .withLeftoverScope(DockerSandboxConfig.LeftoverScope.ENGINE);
        try (DockerSandbox sandbox = new DockerSandbox(restarted)) {
            // Other suites may share this engine: everything but our stale run counts as current.
            int removed = sandbox.removeLeftovers((execution, attempt) -> !execution.equals(stale.executionId()));
            assertThat(removed).isEqualTo(1);
            assertThat(DockerSandboxIT.outrunContainers(deadNode)).isEmpty();
        } finally {
            dead.close();
        }
    }

    @Test
    void closingTheSandboxRemovesRunsStillOpen() {
        String node = node();
        DockerSandbox sandbox = new DockerSandbox(DockerSandboxConfig.defaults(node));
        sandbox.start(sleeper(node));
        sandbox.close();
        assertThat(DockerSandboxIT.outrunContainers(node)).isEmpty();
    }

    @Test
    void verifyNamesAMissingImageAndHowToBuildIt() {
        DockerSandboxConfig config = DockerSandboxConfig.defaults(node()).withImage("outrun-no-such-image:nope");
        try (DockerSandbox sandbox = new DockerSandbox(config)) {
            assertThatThrownBy(sandbox::verify)
                    .isInstanceOf(SandboxUnavailableException.class)
                    .hasMessageContaining("outrun-no-such-image:nope")
                    .hasMessageContaining("sandbox/image/build.sh");
        }
    }

    @Test
    void verifyNamesAnImageWithoutBash() throws Exception {
        String node = node();
        String image = "outrun-test-nobash:" + node;
        try (DockerClients clients = new DockerClients(DockerSandboxConfig.defaults(node))) {
            importImage(image, tarWithOneFile());
            try (DockerSandbox sandbox = new DockerSandbox(DockerSandboxConfig.defaults(node).withImage(image))) {
                assertThatThrownBy(sandbox::verify)
                        .isInstanceOf(SandboxUnavailableException.class)
                        .hasMessageContaining(image)
                        .hasMessageContaining("no /bin/bash");
            } finally {
                clients.control.removeImageCmd(image).withForce(true).exec();
            }
        }
        assertThat(DockerSandboxIT.outrunContainers(node)).isEmpty();
    }

    /**
     * {@code docker import}: docker-java's createImageCmd sends a body the engine 20.10 reads as a
     * truncated tar ("unexpected EOF"), so this fixture goes through the CLI.
     */
    static void importImage(String image, byte[] tar) throws IOException, InterruptedException {
        Process process = new ProcessBuilder("docker", "import", "-", image)
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try (var stdin = process.getOutputStream()) {
            stdin.write(tar);
        }
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as("docker import exit").isZero();
    }

    /** A root filesystem holding one text file: an image with no shell at all. */
    static byte[] tarWithOneFile() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
            byte[] content = "no shell here\n".getBytes(StandardCharsets.UTF_8);
            TarArchiveEntry entry = new TarArchiveEntry("README");
            entry.setSize(content.length);
            tar.putArchiveEntry(entry);
            tar.write(content);
            tar.closeArchiveEntry();
        }
        return bytes.toByteArray();
    }
}
