package io.outrun.sandbox.process;

import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 42: under bubblewrap, spares are whole sandboxes made ahead (bwrap, the wrapper, and the
 * API relay listening before a run comes). A run in the worker's directory is served by one and
 * is isolated as a spawned run is (hidden paths, the host read-only, no network, nothing outlives it);
 * its lease's first look still stops a run whose lease lapsed; its relay answers at the
 * command's first instruction with no relay line before it; a spawned run (its own workdir)
 * reaches its relay too. Against the real bwrap and socat.
 */
class BubblewrapSparesIT {

    @TempDir
    Path dir;
    private ProcessSandbox sandbox;
    private Path hidden;
    private Path relays;

    @BeforeEach
    void start() throws Exception {
        assertThat(Bubblewrap.unusableBecause()).as("bubblewrap works here (.ci/run installs it)").isNull();
        Requirements.binary("socat");
        hidden = Files.createDirectories(dir.resolve("data"));
        Files.writeString(hidden.resolve("dev-token"), "otk_secret");
        relays = Files.createDirectories(dir.resolve("api-node"));
        sandbox = new ProcessSandbox().isolated(List.of(hidden)).withPoolSize(1).withApiRelay(relays);
        sandbox.prepare(new Sandbox.NodeShape("bw-spares", Limits.DEFAULTS, 2, null));
        awaitSpare();
    }

    @AfterEach
    void stop() {
        sandbox.close();
    }

    private void awaitSpare() throws InterruptedException {
        Await.until("a spare waiting", Duration.ofSeconds(20), () -> !sandbox.sparePids().isEmpty());
    }

    /** A run in the worker's own directory (no workdir): what a spare serves. */
    private static RunSpec spec(String command, Duration timeout) {
        return new RunSpec(UUID.randomUUID(), 1, 1, "bw", "bw", command, null, null, Map.of("GREETING", "hi there"), timeout,
                1 << 20, Limits.DEFAULTS, null);
    }

    @Test
    void aSpareServesARunIsolatedAsASpawnedOne() throws Exception {
        Path lease = Files.createDirectories(hidden.resolve("leases")).resolve("run.1");
        Files.writeString(lease, (System.currentTimeMillis() / 1000 + 60) + "\n");
        long served = sandbox.sparesServed();
        String command = "echo \"$GREETING\"; cat " + hidden.resolve("dev-token") + " 2>/dev/null || echo token-hidden;"
                + " touch /usr/outrun-probe 2>/dev/null || echo read-only; (exec 3<>/dev/tcp/1.1.1.1/53) 2>/dev/null || echo no-network;"
                + " echo $$ \"${_outrun_relay-unset}\"; echo err >&2; exit 3";
        Path spareDir;
        try (Run run = sandbox.start(spec(command, Duration.ofSeconds(30)).withLeaseFile(lease))) {
            Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
            assertThat(sandbox.sparesServed()).as("served by a spare").isEqualTo(served + 1);
            assertThat(run.stdout().text()).as(run.stderr().text()).isEqualTo("hi there\ntoken-hidden\nread-only\nno-network\n2 unset\n");
            assertThat(run.stderr().text()).isEqualTo("err\n");
            assertThat(exit.exitCode()).isEqualTo(3);
            try (var spares = Files.list(sandbox.scratchDir())) {
                spareDir = spares.filter(p -> p.getFileName().toString().startsWith("spare-")).filter(p -> {
                    return Files.exists(p.resolve("go"));
                }).findFirst().orElseThrow(() -> new AssertionError("the served spare's directory"));
            }
        }
        assertThat(spareDir).as("the spare's directory goes with its run").doesNotExist();
        assertThat(relays.resolve(spareDir.getFileName())).as("and its relay's").doesNotExist();
        // A lease already lapsed at the first look: the command never runs, on a spare too.
        awaitSpare();
        Files.writeString(lease, (System.currentTimeMillis() / 1000 - 5) + "\n");
        try (Run run = sandbox.start(spec("echo ran", Duration.ofSeconds(30)).withLeaseFile(lease))) {
            Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
            assertThat(sandbox.sparesServed()).as("served by a spare").isEqualTo(served + 2);
            assertThat(run.stdout().text()).isEmpty();
            assertThat(exit.exitCode()).isEqualTo(137);
        }
    }

    @Test
    void nothingASpareRunStartedOutlivesItsKill() throws Exception {
        long served = sandbox.sparesServed();
        String detaching = "setsid sleep 1046 >/dev/null 2>&1 & nohup sleep 1047 >/dev/null 2>&1 & (sleep 1048 >/dev/null 2>&1 &);"
                + " echo started; sleep 60";
        try (Run run = sandbox.start(spec(detaching, Duration.ofSeconds(30)))) {
            Await.until("started", Duration.ofSeconds(10), () -> run.stdout().text().contains("started"));
            assertThat(sandbox.sparesServed()).isEqualTo(served + 1);
            assertThat(alive("sleep 1046")).as("the detached child runs while the run does").isNotEmpty();
            run.kill();
            run.awaitExit(Duration.ofSeconds(10)).orElseThrow();
            Await.until("every child gone after the kill", Duration.ofSeconds(5),
                    () -> alive("sleep 1046").isEmpty() && alive("sleep 1047").isEmpty() && alive("sleep 1048").isEmpty());
        }
    }

    @Test
    void theRelayAnswersAtTheCommandsFirstInstructionOnASpareAndSpawnedRunsReachItToo() throws Exception {
        // A stand-in for the node's bridge: an attempt's socket, alone in its directory, echoing.
        Path socket = Files.createDirectories(relays.resolve("attempt-1")).resolve(Limits.API_SOCKET_NAME);
        Process echo = new ProcessBuilder("socat", "UNIX-LISTEN:" + socket + ",fork", "EXEC:cat").redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            Await.until("the stand-in listening", Duration.ofSeconds(10), () -> Files.exists(socket));
            String command = "(: </dev/tcp/127.0.0.1/7171) 2>/dev/null && echo open || echo closed;"
                    + " exec 3<>/dev/tcp/127.0.0.1/7171; echo hello >&3; read -r back <&3; echo \"back:$back\"";
            long served = sandbox.sparesServed();
            RunSpec onSpare = spec(command, Duration.ofSeconds(30)).withLimits(Limits.DEFAULTS.withApiSocket(socket));
            try (Run run = sandbox.start(onSpare)) {
                Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
                assertThat(sandbox.sparesServed()).as("served by a spare").isEqualTo(served + 1);
                // Nothing ran before the command: the relay was listening before the run came.
                assertThat(run.stdout().text()).as(run.stderr().text()).isEqualTo("open\nback:hello\n");
                assertThat(exit.exitCode()).isZero();
            }
            Path workdir = Files.createDirectories(dir.resolve("work"));
            RunSpec spawned = new RunSpec(UUID.randomUUID(), 1, 1, "bw", "bw", command, null, workdir.toString(), Map.of(),
                    Duration.ofSeconds(30), 1 << 20, Limits.DEFAULTS.withApiSocket(socket), null);
            try (Run run = sandbox.start(spawned)) {
                Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
                assertThat(sandbox.sparesServed()).as("spawned: its own workdir").isEqualTo(served + 1);
                assertThat(run.stdout().text()).as(run.stderr().text()).isEqualTo("open\nback:hello\n");
                assertThat(exit.exitCode()).isZero();
            }
        } finally {
            echo.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
    }

    /** Host processes whose command line contains {@code marker}. */
    private static List<ProcessHandle> alive(String marker) {
        return ProcessHandle.allProcesses().filter(p -> p.info().commandLine().map(c -> c.contains(marker)).orElse(false))
                .toList();
    }
}
