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

/**
 * Who ended a container, against a private engine of this test (restarted, stopped by an
 * "operator"): the command's own ends stay its own; the engine's and an operator's are lost.
 */
class EngineFaultIT {

    static final String NODE = "ef-" + UUID.randomUUID().toString().substring(0, 8);

    static PrivateDockerd engine;
    static DockerSandbox sandbox;

    @BeforeAll
    static void startEngine() throws Exception {
        engine = PrivateDockerd.start(false);
        sandbox = new DockerSandbox(DockerSandboxConfig.defaults(NODE).withDockerHost(engine.host())
                .withEngineGrace(Duration.ofSeconds(60)));
        sandbox.verify();
    }

    @AfterAll
    static void nothingIsLeftBehind() throws Exception {
        if (sandbox != null) {
            sandbox.close();
        }
        if (engine != null) {
            assertThat(engine.outrunContainers()).as("Outrun containers left on the private engine").isEmpty();
            engine.close();
        }
    }

    static RunSpec spec(String command) {
        return new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, command, null, null, Map.of(), Duration.ofSeconds(120),
                1024 * 1024, Limits.DEFAULTS, null);
    }

    @Test
    void aCommandThatSendsItselfSigtermEndsByItself() throws Exception {
        try (Run run = sandbox.start(spec("echo before; kill -TERM $$; echo after"))) {
            Exit exit = run.awaitExit(Duration.ofSeconds(60)).orElseThrow();
            assertThat(exit.exitCode()).isEqualTo(143);
            assertThat(exit.lost()).as("lost: " + exit.lostTo()).isFalse();
            assertThat(exit.killed()).isFalse();
            assertThat(run.stdout().text()).isEqualTo("before\n");
        }
    }

    @Test
    void anOperatorsDockerStopIsNotTheCommandsEnd() throws Exception {
        try (DockerRun run = (DockerRun) sandbox.start(spec("echo started; sleep 100"))) {
            Await.until("output", Duration.ofSeconds(30), () -> run.stdout().text().contains("started"));
            engine.docker("stop " + run.containerId());
            Exit exit = run.awaitExit(Duration.ofSeconds(60)).orElseThrow();
            assertThat(exit.lost()).isTrue();
            assertThat(exit.lostTo()).contains("stopped outside Outrun").contains("signal 15");
        }
    }

    @Test
    void anOperatorsDockerKillIsNotTheCommandsEnd() throws Exception {
        try (DockerRun run = (DockerRun) sandbox.start(spec("echo started; sleep 100"))) {
            Await.until("output", Duration.ofSeconds(30), () -> run.stdout().text().contains("started"));
            engine.docker("kill " + run.containerId());
            Exit exit = run.awaitExit(Duration.ofSeconds(60)).orElseThrow();
            assertThat(exit.lost()).isTrue();
            assertThat(exit.lostTo()).contains("stopped outside Outrun").contains("signal 9");
        }
    }

    @Test
    void outrunsOwnKillStaysOutruns() throws Exception {
        try (Run run = sandbox.start(spec("echo started; sleep 100"))) {
            Await.until("output", Duration.ofSeconds(30), () -> run.stdout().text().contains("started"));
            assertThat(run.kill()).isTrue();
            Exit exit = run.awaitExit(Duration.ofSeconds(60)).orElseThrow();
            assertThat(exit.lost()).isFalse();
            assertThat(exit.killed()).isTrue();
        }
    }

    @Test
    void anEngineRestartUnderRunningCommandsIsTheEnginesDoing() throws Exception {
        try (Run a = sandbox.start(spec("for j in $(seq 1 60); do echo tick; sleep 1; done"));
             Run b = sandbox.start(spec("for j in $(seq 1 60); do echo tick; sleep 1; done"))) {
            Await.until("output", Duration.ofSeconds(30), () -> a.stdout().text().contains("tick")
                    && b.stdout().text().contains("tick"));
            long lossesBefore = sandbox.engineLosses();
            engine.stopEngine();
            Await.until("the engine counts as away", Duration.ofSeconds(30), () -> !sandbox.engineUp());
            engine.startEngine();
            for (Run run : new Run[] {a, b}) {
                Exit exit = run.awaitExit(Duration.ofSeconds(90)).orElseThrow();
                assertThat(exit.lost()).as("exit " + exit).isTrue();
                assertThat(exit.lostTo()).contains("Docker engine");
            }
            Await.until("the engine counts as back", Duration.ofSeconds(30), () -> sandbox.engineUp());
            assertThat(sandbox.engineLosses()).isGreaterThan(lossesBefore);
        }
    }

    @Test
    void anEngineThatCrashedAndCameBackWithoutLiveRestoreIsTheEnginesDoing() throws Exception {
        try (Run run = sandbox.start(spec("for j in $(seq 1 60); do echo tick; sleep 1; done"))) {
            Await.until("output", Duration.ofSeconds(30), () -> run.stdout().text().contains("tick"));
            engine.killEngine();
            // The run does not answer while the engine is away: it waits for it.
            assertThat(run.awaitExit(Duration.ofSeconds(2))).isEmpty();
            engine.startEngine();
            Exit exit = run.awaitExit(Duration.ofSeconds(90)).orElseThrow();
            assertThat(exit.lost()).as("exit " + exit).isTrue();
            assertThat(exit.lostTo()).contains("Docker engine");
        }
    }
}
