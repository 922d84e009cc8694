package io.outrun.sandbox.process;

import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.testing.Await;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 25 #10: host-process runs in bubblewrap. Nothing a run started is alive after its end, a
 * kill or its timeout, however it detached; the host is read-only but its workdir; hidden paths
 * (the dev's data dir) cannot be read; there is no network. Against the real bwrap (CI installs it).
 */
class BubblewrapSandboxIT {

    @TempDir
    Path dir;
    private ProcessSandbox sandbox;
    private Path hidden;
    private Path workdir;

    @BeforeEach
    void start() throws Exception {
        assertThat(Bubblewrap.unusableBecause()).as("bubblewrap works here (.ci/run installs it)").isNull();
        hidden = Files.createDirectories(dir.resolve("data"));
        Files.writeString(hidden.resolve("dev-token"), "otk_secret");
        workdir = Files.createDirectories(dir.resolve("work"));
        sandbox = new ProcessSandbox().isolated(List.of(hidden));
    }

    @AfterEach
    void stop() {
        sandbox.close();
    }

    private RunSpec spec(String command, Duration timeout) {
        return new RunSpec(UUID.randomUUID(), 1, 1, "bw", "bw", command, null, workdir.toString(), Map.of(), timeout,
                1 << 20, Limits.DEFAULTS, null);
    }

    /** Host processes whose command line contains {@code marker}. */
    private static List<ProcessHandle> alive(String marker) {
        return ProcessHandle.allProcesses().filter(p -> p.info().commandLine().map(c -> c.contains(marker)).orElse(false))
                .toList();
    }

    private static final String DETACHING = "setsid sleep %1$d >/dev/null 2>&1 & nohup sleep %2$d >/dev/null 2>&1 &"
            + " (sleep %3$d >/dev/null 2>&1 &) ; echo started;";

    /**
     * Dev keeps its lease files in its hidden data dir: the run's own lease file stays readable
     * (its kill switch's first look found none, and every dev run printed "No such file" on
     * stderr), while the rest of the directory stays hidden.
     */
    @Test
    void aRunSeesItsOwnLeaseFileInsideAHiddenDirectory() throws Exception {
        Path lease = Files.createDirectories(hidden.resolve("leases")).resolve("run.1");
        Files.writeString(lease, (System.currentTimeMillis() / 1000 + 60) + "\n");
        RunSpec spec = spec("cat " + lease + " >/dev/null && echo lease-visible; cat " + hidden.resolve("dev-token")
                + " 2>/dev/null || echo token-hidden", Duration.ofSeconds(30)).withLeaseFile(lease);
        try (Run run = sandbox.start(spec)) {
            Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
            assertThat(exit.exitCode()).as(run.stderr().text()).isZero();
            assertThat(run.stdout().text()).isEqualTo("lease-visible\ntoken-hidden\n");
            assertThat(run.stderr().text()).isEmpty();
        }
        // A lease already lapsed at the first look: the command never runs.
        Files.writeString(lease, (System.currentTimeMillis() / 1000 - 5) + "\n");
        try (Run run = sandbox.start(spec("echo ran", Duration.ofSeconds(30)).withLeaseFile(lease))) {
            Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
            assertThat(run.stdout().text()).isEmpty();
            assertThat(exit.exitCode()).isEqualTo(137);
        }
    }

    @Test
    void nothingARunStartedOutlivesItsEnd() throws Exception {
        try (Run run = sandbox.start(spec(DETACHING.formatted(1006, 1007, 1008) + " exit 0", Duration.ofSeconds(30)))) {
            Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
            assertThat(exit.exitCode()).as(run.stderr().text()).isZero();
            assertThat(run.stdout().text()).isEqualTo("started\n");
            Await.until("every detached child gone with the run", Duration.ofSeconds(5),
                    () -> alive("sleep 1006").isEmpty() && alive("sleep 1007").isEmpty() && alive("sleep 1008").isEmpty());
        }
    }

    @Test
    void nothingOutlivesAKillOrATimeout() throws Exception {
        try (Run run = sandbox.start(spec(DETACHING.formatted(1016, 1017, 1018) + " sleep 60", Duration.ofSeconds(30)))) {
            Await.until("started", Duration.ofSeconds(10), () -> run.stdout().text().contains("started"));
            assertThat(alive("sleep 1016")).as("the detached child runs while the run does").isNotEmpty();
            run.kill();
            run.awaitExit(Duration.ofSeconds(10)).orElseThrow();
            Await.until("every child gone after the kill", Duration.ofSeconds(5),
                    () -> alive("sleep 1016").isEmpty() && alive("sleep 1017").isEmpty() && alive("sleep 1018").isEmpty());
        }
        try (Run run = sandbox.start(spec(DETACHING.formatted(1026, 1027, 1028) + " sleep 60", Duration.ofMillis(1500)))) {
            Exit exit = run.awaitExit(Duration.ofSeconds(20)).orElseThrow();
            assertThat(exit.timedOut()).isTrue();
            Await.until("every child gone after the timeout", Duration.ofSeconds(5),
                    () -> alive("sleep 1026").isEmpty() && alive("sleep 1027").isEmpty() && alive("sleep 1028").isEmpty());
        }
    }

    @Test
    void theHostIsReadOnlyButTheWorkdirHiddenPathsUnreadableAndNoNetwork() throws Exception {
        // Outside the workdir and outside /tmp (a tmpfs of the run's own): the host's files.
        Path outside = Path.of("target", "outrun-bubblewrap-probe-" + UUID.randomUUID()).toAbsolutePath();
        try (ServerSocket listener = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            String command = "echo kept > here.txt && cat here.txt;"
                    + " touch " + outside + " 2>/dev/null && echo wrote-outside || echo outside-read-only;"
                    + " cat " + hidden.resolve("dev-token") + " 2>/dev/null || echo token-hidden;"
                    + " ls -A " + hidden + " | wc -l;"
                    + " (exec 3<>/dev/tcp/127.0.0.1/" + listener.getLocalPort() + ") 2>/dev/null && echo connected || echo no-network;"
                    + " echo $$";
            try (Run run = sandbox.start(spec(command, Duration.ofSeconds(30)))) {
                Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
                assertThat(exit.exitCode()).as(run.stderr().text()).isZero();
                assertThat(run.stdout().text()).isEqualTo("kept\noutside-read-only\ntoken-hidden\n0\nno-network\n2\n");
            }
        }
        assertThat(Files.readString(workdir.resolve("here.txt"), StandardCharsets.UTF_8)).isEqualTo("kept\n");
        assertThat(outside).doesNotExist();
        assertThat(Files.readString(hidden.resolve("dev-token"))).isEqualTo("otk_secret");
    }

    @Test
    void stdinAndATerminalWorkInside() throws Exception {
        io.outrun.sandbox.StdinScenarios.aPromptIsAnsweredLineByLine(sandbox, spec("true", Duration.ofSeconds(30)));
        io.outrun.sandbox.StdinScenarios.aTerminalIsATerminal(sandbox, spec("true", Duration.ofSeconds(30)));
    }
}
