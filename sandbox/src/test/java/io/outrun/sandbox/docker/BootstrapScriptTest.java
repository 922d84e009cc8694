package io.outrun.sandbox.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.model.inputs.StdinMode;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.script.ForeignLocale;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * bootstrap.sh ({@link ContainerRecipe#BOOTSTRAP}) under the host's bash, without Docker: in a
 * {@link StandInContainer} (its own PID, mount and user namespaces, /tmp a tmpfs, a stand-in
 * setpriv), fed what {@link ContainerRecipe#commandStdin} and {@link ContainerRecipe#pooledStdin}
 * send a real one. The real drop to 10001 and the memory killer are DockerSandboxIT's.
 */
class BootstrapScriptTest {

    private static final Duration LIMIT = Duration.ofSeconds(30);

    private StandInContainer container;
    private Path lease;

    @BeforeAll
    static void needsNamespaces() {
        String why = StandInContainer.unusableBecause();
        io.outrun.testing.Requirements.require("bootstrap.sh's stand-in container", why);
    }

    @BeforeEach
    void standIn() throws IOException {
        container = new StandInContainer();
        lease = container.dir.resolve("lease");
        leaseUntil(now() + 600);
        Files.setPosixFilePermissions(lease, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
    }

    @AfterEach
    void removeStandIn() throws IOException {
        container.remove();
    }

    private static long now() {
        return System.currentTimeMillis() / 1000;
    }

    /** Rewritten in place, as the worker's LeaseFile does (the mount follows the inode). */
    private void leaseUntil(long epochSeconds) throws IOException {
        Files.writeString(lease, epochSeconds + "\n");
    }

    private static RunSpec spec(String command, Map<String, String> env) {
        return new RunSpec(UUID.randomUUID(), 1, 1, "node", "node", command, null, null, env, Duration.ofSeconds(60),
                1 << 20, null, null);
    }

    private StandInContainer.Running fresh(String backstop, boolean withLease) throws IOException {
        return container.start(ContainerRecipe.bootstrap(backstop, withLease, null, false), withLease ? lease : null, true,
                null, Map.of());
    }

    @Test
    void aCommandRunsDroppedWithItsEnvironmentAndItsStatusIsTheContainers() throws Exception {
        RunSpec spec = spec("echo \"$GREETING\"; echo \"$PAGER\"; exit 42", Map.of("GREETING", "it's \"quoted\" $HOME"));
        try (var run = fresh("60", true).send(ContainerRecipe.commandStdin(spec).readAllBytes())) {
            assertThat(run.awaitExit(LIMIT)).as(run.stderr()).isEqualTo(42);
            assertThat(run.stdout()).isEqualTo("it's \"quoted\" $HOME\ncat\n");
        }
        assertThat(container.setprivArgs()).isEqualTo(String.join("\n", "--reuid=10001", "--regid=10001",
                "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "/bin/bash", "/tmp/.outrun-start", ""));
        // The root side never had the run's variables: only the dropped command sourced them.
        assertThat(container.setprivEnv()).doesNotContain("GREETING").contains("PAGER=cat");
    }

    @Test
    void aCommandCutShortNeverRunsWhicheverWayItIsRead() throws Exception {
        for (int size : new int[] {100, 70_000}) {
            String command = "echo RAN\n" + "#".repeat(size - 9);
            byte[] whole = ContainerRecipe.commandStdin(spec(command, Map.of())).readAllBytes();
            byte[] cut = java.util.Arrays.copyOf(whole, whole.length - 1);
            try (var run = fresh("60", true).send(cut)) {
                assertThat(run.awaitExit(LIMIT)).as("%d bytes: %s", size, run.stderr())
                        .isEqualTo(ContainerRecipe.BOOTSTRAP_FAILED);
                assertThat(run.stderr()).contains("the command arrived truncated");
                assertThat(run.stdout()).isEmpty();
            }
        }
        byte[] env = ContainerRecipe.commandStdin(spec("echo RAN", Map.of("A", "b"))).readAllBytes();
        try (var run = fresh("60", true).send(java.util.Arrays.copyOf(env, 14))) {
            assertThat(run.awaitExit(LIMIT)).isEqualTo(ContainerRecipe.BOOTSTRAP_FAILED);
            assertThat(run.stderr()).contains("the environment arrived truncated");
        }
    }

    /**
     * The counts are bytes under any locale the image sets (here {@link ForeignLocale}, where
     * read -N and ${#s} would count characters), whichever way the command is read; the
     * command then runs under that locale again.
     */
    @Test
    void byteCountsHoldUnderAForeignLocale() throws Exception {
        for (String text : new String[] {"مرحبا é ٠١٢٣", "é٣".repeat(20_000)}) {
            String command = "cat <<'END'\n" + text + "\nEND\nprintf '%s|%s\\n' \"$LC_ALL\" \"$WORD\"";
            byte[] stdin = ContainerRecipe.commandStdin(spec(command, Map.of("WORD", "كلمة"))).readAllBytes();
            try (var run = container.start(ContainerRecipe.bootstrap("60", true, null, false), lease, true, null,
                    ForeignLocale.env()).send(stdin)) {
                assertThat(run.awaitExit(LIMIT)).as(run.stderr()).isZero();
                assertThat(run.stdout()).isEqualTo(text + "\n" + ForeignLocale.name() + "|كلمة\n");
            }
        }
    }

    @Test
    void aLeaseLapsedBeforeTheStartNeverStartsTheCommand() throws Exception {
        leaseUntil(now() - 5);
        try (var run = fresh("60", true).send(ContainerRecipe.commandStdin(spec("echo RAN", Map.of())).readAllBytes())) {
            assertThat(run.awaitExit(LIMIT)).isEqualTo(137);
            assertThat(run.stdout()).isEmpty();
        }
        assertThat(container.setprivArgs()).as("setpriv never ran").isNull();
    }

    @Test
    void theKillSwitchEndsTheRunOnceItsLeaseLapses() throws Exception {
        String command = "sleep 300 & echo started; wait";
        try (var run = fresh("600", true).send(ContainerRecipe.commandStdin(spec(command, Map.of())).readAllBytes())) {
            io.outrun.testing.Await.until("the command started", Duration.ofSeconds(20),
                    () -> run.stdout().contains("started"));
            Thread.sleep(1500);
            assertThat(run.process.isAlive()).as("a lease still current keeps the run").isTrue();
            leaseUntil(now() - 1);
            long lapsed = System.nanoTime();
            assertThat(run.awaitExit(Duration.ofSeconds(10))).isEqualTo(137);
            assertThat(Duration.ofNanos(System.nanoTime() - lapsed)).isLessThan(Duration.ofSeconds(4));
        }
    }

    /**
     * The kill switch waits its seconds with builtins only: with every pid the run may have
     * taken (its command forking until fork fails), it still ends the run on time. A loop that
     * forked would wait in bash's fork retries instead (up to 30 s).
     */
    @Test
    void theKillSwitchFiresWithEveryPidHeld() throws Exception {
        String command = "echo started; while :; do sleep 300 & done";
        try (var run = container.start(ContainerRecipe.bootstrap("600", true, null, false), lease, true, 40, Map.of())
                .send(ContainerRecipe.commandStdin(spec(command, Map.of())).readAllBytes())) {
            boolean held = within(Duration.ofSeconds(20),
                    () -> run.stdout().contains("started") && run.stderr().contains("fork: retry"));
            io.outrun.testing.Requirements.require("the kill switch with every pid held",
                    held ? null : "the pids limit did not hold here: " + run.stderr());
            leaseUntil(now() - 1);
            long lapsed = System.nanoTime();
            assertThat(run.awaitExit(Duration.ofSeconds(20))).isEqualTo(137);
            assertThat(Duration.ofNanos(System.nanoTime() - lapsed)).isLessThan(Duration.ofSeconds(4));
        }
    }

    /** Whether {@code condition} came true within {@code limit} (false: the test's premise did not hold here). */
    private static boolean within(Duration limit, java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + limit.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }

    @Test
    void theBackstopEndsARunWhoseLeaseStaysCurrent() throws Exception {
        try (var run = fresh("2", true).send(ContainerRecipe.commandStdin(spec("sleep 300", Map.of())).readAllBytes())) {
            long started = System.nanoTime();
            assertThat(run.awaitExit(Duration.ofSeconds(15))).isEqualTo(137);
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(6));
        }
    }

    @Test
    void withoutALeaseFileTimeoutIsTheBackstop() throws Exception {
        try (var run = fresh("1", false).send(ContainerRecipe.commandStdin(spec("sleep 300", Map.of())).readAllBytes())) {
            assertThat(run.awaitExit(Duration.ofSeconds(15))).isEqualTo(137);
        }
        try (var run = fresh("60", false).send(ContainerRecipe.commandStdin(spec("exit 3", Map.of())).readAllBytes())) {
            assertThat(run.awaitExit(LIMIT)).isEqualTo(3);
        }
    }

    /** Frames reach the command's stdin; the 0 frame ends it, and /dev/stdin reopened then answers EOF. */
    @Test
    void stdinFramesReachTheCommandUntilTheZeroFrame() throws Exception {
        RunSpec spec = spec("cat; echo '[end]'; cat /dev/stdin; echo again", Map.of()).withStdin(StdinMode.PIPE);
        StdinFrames frames = new StdinFrames(ContainerRecipe.commandStdin(spec));
        frames.send("hello".getBytes(StandardCharsets.UTF_8));
        frames.send(" wörld\n".getBytes(StandardCharsets.UTF_8));
        frames.end();
        try (var run = fresh("60", true).send(frames.readAllBytes())) {
            assertThat(run.awaitExit(LIMIT)).as(run.stderr()).isZero();
            assertThat(run.stdout()).isEqualTo("hello wörld\n[end]\nagain\n");
        }
    }

    @Test
    void aTerminalRunsUnderScript() throws Exception {
        io.outrun.testing.Requirements.require("the bootstrap's tty test", Files.isExecutable(Path.of("/usr/bin/script"))
                ? null : "util-linux script is not installed");
        RunSpec spec = spec("[ -t 0 ] && [ -t 1 ] && echo terminal", Map.of()).withStdin(StdinMode.TTY);
        StdinFrames frames = new StdinFrames(ContainerRecipe.commandStdin(spec));
        frames.end();
        try (var run = fresh("60", true).send(frames.readAllBytes())) {
            assertThat(run.awaitExit(LIMIT)).as(run.stderr()).isZero();
            assertThat(run.stdout()).contains("terminal");
        }
        assertThat(container.setprivArgs()).contains("/usr/bin/script\n-qfec\n/bin/bash /tmp/.outrun-start\n/dev/null\n");
    }

    @Test
    void aPooledContainerTakesItsRunFromTheHeaderOrGivesUp() throws Exception {
        RunSpec spec = spec("echo \"$WORD\"", Map.of("WORD", "pooled"));
        GatedStdin stdin = ContainerRecipe.pooledStdin(spec);
        stdin.open();
        try (var run = container.start(ContainerRecipe.bootstrap("", true, 60L, false), lease, true, null, Map.of())
                .send(stdin.readAllBytes())) {
            assertThat(run.awaitExit(LIMIT)).as(run.stderr()).isZero();
            assertThat(run.stdout()).isEqualTo("pooled\n");
        }
        try (var run = container.start(ContainerRecipe.bootstrap("", true, 1L, false), lease, true, null, Map.of())) {
            assertThat(run.awaitExit(LIMIT)).isEqualTo(ContainerRecipe.BOOTSTRAP_FAILED);
            assertThat(run.stderr()).contains("no command received");
        }
    }

    @Test
    void anImageWithoutSetprivOrAWrongHeaderFailsClosed() throws Exception {
        byte[] stdin = ContainerRecipe.commandStdin(spec("echo RAN", Map.of())).readAllBytes();
        try (var run = container.start(ContainerRecipe.bootstrap("60", true, null, false), lease, false, null, Map.of())
                .send(stdin)) {
            assertThat(run.awaitExit(LIMIT)).isEqualTo(ContainerRecipe.BOOTSTRAP_FAILED);
            assertThat(run.stderr()).contains("/usr/bin/setpriv");
            assertThat(run.stdout()).isEmpty();
        }
        try (var run = fresh("60", true).send("8 0 0 7\necho RAN".getBytes(StandardCharsets.US_ASCII))) {
            assertThat(run.awaitExit(LIMIT)).isEqualTo(ContainerRecipe.BOOTSTRAP_FAILED);
            assertThat(run.stderr()).contains("unknown stdin mode");
            assertThat(run.stdout()).isEmpty();
        }
    }
}
