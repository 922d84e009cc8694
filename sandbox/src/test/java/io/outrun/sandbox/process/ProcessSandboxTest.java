package io.outrun.sandbox.process;

import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.testing.Await;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class ProcessSandboxTest {

    private final ProcessSandbox sandbox = new ProcessSandbox();

    @Test
    void capturesBothStreamsAndTheExitCode() throws Exception {
        try (Run run = sandbox.start(RunSpec.of("echo out; echo err >&2; exit 4", Duration.ofSeconds(10)))) {
            Exit exit = await(run);
            assertThat(exit.exitCode()).isEqualTo(4);
            assertThat(run.stdout().text()).isEqualTo("out\n");
            assertThat(run.stderr().text()).isEqualTo("err\n");
        }
    }

    @Test
    void aMegabyteCommandReachesBashIntact() throws Exception {
        String payload = "x".repeat(1 << 20);
        String command = "s='" + payload + "'\necho ${#s}";
        try (Run run = sandbox.start(RunSpec.of(command, Duration.ofSeconds(20)))) {
            assertThat(await(run).exitCode()).isZero();
            assertThat(run.stdout().text()).isEqualTo((1 << 20) + "\n");
        }
    }

    @Test
    void timeoutKillsTheWholeTree(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path marker = dir.resolve("child-alive");
        String command = "(sleep 2; touch " + marker + ") & echo $!; sleep 30";
        long t0 = System.nanoTime();
        long child;
        try (Run run = sandbox.start(RunSpec.of(command, Duration.ofMillis(500)))) {
            Exit exit = await(run);
            assertThat(exit.timedOut()).isTrue();
            assertThat((System.nanoTime() - t0) / 1_000_000).isLessThan(2500);
            child = Long.parseLong(run.stdout().text().strip());
        }
        awaitGone(child);
        assertThat(Files.exists(marker)).as("the background child was killed too").isFalse();
    }

    @Test
    void closeKillsBackgroundChildrenOfABashThatAlreadyExited(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path marker = dir.resolve("orphan-alive");
        String command = "(sleep 2; touch " + marker + ") >/dev/null 2>&1 & echo $!; exit 0";
        long child;
        try (Run run = sandbox.start(RunSpec.of(command, Duration.ofSeconds(10)))) {
            assertThat(await(run).exitCode()).isZero();
            child = Long.parseLong(run.stdout().text().strip());
        }
        awaitGone(child);
        assertThat(Files.exists(marker)).as("the background child of an ended run was killed at close").isFalse();
    }

    /** Until {@code pid} is gone: killed, it never reaches its touch; a survivor fails here. */
    private static void awaitGone(long pid) throws InterruptedException {
        // The probe must be able to say "alive": without /proc it would call everything gone.
        assertThat(dead(ProcessHandle.current().pid())).as("this JVM is seen alive through /proc").isFalse();
        Await.until("process " + pid + " to be gone (a survivor would touch its marker at 2 s)", Duration.ofMillis(1500),
                () -> dead(pid));
    }

    /** Gone, or a zombie: killed but not yet reaped by whoever adopted it, it runs nothing more. */
    private static boolean dead(long pid) {
        assertThat(Path.of("/proc/self/stat")).as("these checks read /proc").isRegularFile();
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            char state = stat.charAt(stat.lastIndexOf(')') + 2);
            return state == 'Z' || state == 'X';
        } catch (java.nio.file.NoSuchFileException e) {
            return true; // /proc is there but this pid's entry is not: gone
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void killEndsARunAndSaysSo() throws Exception {
        try (Run run = sandbox.start(RunSpec.of("sleep 30", Duration.ofSeconds(60)))) {
            run.kill();
            Exit exit = await(run);
            assertThat(exit.killed()).isTrue();
            assertThat(exit.timedOut()).isFalse();
        }
    }

    @Test
    void removesLeftoverRunsThatAreNoLongerCurrent() throws Exception {
        RunSpec stale = RunSpec.of("sleep 30", Duration.ofSeconds(60));
        RunSpec current = RunSpec.of("sleep 30", Duration.ofSeconds(60));
        Run left = sandbox.start(stale);   // as if its worker had died: never closed
        Run kept = sandbox.start(current);
        try {
            int removed = sandbox.removeLeftovers((id, attempt) -> !id.equals(stale.executionId()));
            assertThat(removed).isGreaterThanOrEqualTo(1);
            assertThat(left.awaitExit(Duration.ofSeconds(5))).isPresent();
            assertThat(kept.awaitExit(Duration.ofMillis(200))).isEmpty();
        } finally {
            left.close();
            kept.close();
        }
    }

    private static Exit await(Run run) throws InterruptedException {
        Optional<Exit> exit = run.awaitExit(Duration.ofSeconds(30));
        assertThat(exit).isPresent();
        return exit.get();
    }
}
