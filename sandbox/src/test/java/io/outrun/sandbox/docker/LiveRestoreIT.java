package io.outrun.sandbox.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.testing.Await;
import io.outrun.testing.PrivateDockerd;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** With the engine's live-restore on, containers outlive a daemon restart; runs re-attach to them. */
class LiveRestoreIT {

    static final String NODE = "lr-" + UUID.randomUUID().toString().substring(0, 8);

    static PrivateDockerd engine;

    @BeforeAll
    static void startEngine() throws Exception {
        engine = PrivateDockerd.start(true);
    }

    @AfterAll
    static void nothingIsLeftBehind() throws Exception {
        if (engine != null) {
            assertThat(engine.outrunContainers()).as("Outrun containers left on the private engine").isEmpty();
            engine.close();
        }
    }

    static DockerSandbox sandbox(Duration grace) {
        return new DockerSandbox(DockerSandboxConfig.defaults(NODE).withDockerHost(engine.host()).withEngineGrace(grace));
    }

    static RunSpec spec(String command) {
        return new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, command, null, null, Map.of(), Duration.ofSeconds(120),
                1024 * 1024, Limits.DEFAULTS, null);
    }

    @Test
    void aRunGoesOnAcrossAnEngineRestartWithTheGapMarkedInItsOutput() throws Exception {
        try (DockerSandbox sandbox = sandbox(Duration.ofSeconds(60));
             Run run = sandbox.start(spec("for j in $(seq 1 12); do echo tick $j; echo err $j >&2; sleep 1; done; echo last"))) {
            Await.until("output", Duration.ofSeconds(30), () -> run.stdout().text().contains("tick 2"));
            engine.restart();
            Exit exit = run.awaitExit(Duration.ofSeconds(90)).orElseThrow();
            assertThat(exit.lost()).as("exit " + exit).isFalse();
            assertThat(exit.exitCode()).isZero();
            String out = run.stdout().text();
            assertThat(out).startsWith("tick 1\ntick 2\n").endsWith("tick 12\nlast\n")
                    .contains("\n[outrun: the Docker engine was away");
            assertThat(run.stderr().text()).contains("[outrun: the Docker engine was away").endsWith("err 12\n");
        }
    }

    @Test
    void anEngineAwayLongerThanTheGraceLosesTheAttempt() throws Exception {
        try (DockerSandbox sandbox = sandbox(Duration.ofSeconds(3))) {
            Run run = sandbox.start(spec("echo started; sleep 100"));
            try {
                Await.until("output", Duration.ofSeconds(30), () -> run.stdout().text().contains("started"));
                engine.stopEngine();
                Exit exit = run.awaitExit(Duration.ofSeconds(60)).orElseThrow();
                assertThat(exit.lost()).isTrue();
                assertThat(exit.lostTo()).contains("did not answer again within 3 s");
            } finally {
                engine.startEngine();
                // Live-restore kept the container running: removed by the run's close once the engine answers.
                Await.until("the engine answers the sandbox", Duration.ofSeconds(30), sandbox::engineUp);
                run.close();
            }
        }
    }
}
