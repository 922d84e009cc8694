package io.outrun.sandbox;

import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.docker.DockerSandbox;
import io.outrun.sandbox.docker.DockerSandboxConfig;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.testing.Requirements;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review: a run whose lease file's deadline has already passed when it starts (its JVM paused
 * between claim and start, or the engine's start outlasted the lease and the sweep re-drove it)
 * must not run its command at all. Both kill switches sleep a second before their first look,
 * so the command runs for about a second, beside the next attempt.
 */
class ExpiredLeaseFileIT {

    private static final String COMMAND = "echo ran-after-its-deadline; sleep 5";

    @Test
    void processSandbox() throws Exception {
        try (ProcessSandbox sandbox = new ProcessSandbox()) {
            check(sandbox, Files.createTempDirectory("outrun-review-"));
        }
    }

    @Test
    void dockerSandbox() throws Exception {
        Requirements.docker();
        try (DockerSandbox sandbox = new DockerSandbox(DockerSandboxConfig.defaults("review-node"))) {
            check(sandbox, Files.createTempDirectory("outrun-review-"));
        }
    }

    private static void check(Sandbox sandbox, Path dir) throws Exception {
        Path file = dir.resolve("lease");
        // Expired 10 s ago.
        Files.writeString(file, String.format("%012d%n", System.currentTimeMillis() / 1000 - 10));
        file.toFile().setReadable(true, false);
        dir.toFile().setExecutable(true, false);
        try (Run run = sandbox.start(RunSpec.of(COMMAND, Duration.ofMinutes(1)).withLeaseFile(file))) {
            Exit exit = run.awaitExit(Duration.ofSeconds(20)).orElseThrow(() -> new AssertionError("never killed"));
            String out = run.stdout().text();
            System.out.printf("REVIEW %s: exit %d, stdout '%s'%n", sandbox.name(), exit.exitCode(), out.strip());
            assertThat(out).as("the command ran though its lease had lapsed before it started").isEmpty();
        }
    }
}
