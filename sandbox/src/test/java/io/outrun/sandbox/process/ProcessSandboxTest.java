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

    /**
     * The wrapper's kill switch, with a stand-in worker (a bash that starts the run as the node
     * does: setsid, stdin a pipe it holds). The worker dies (its pipe closes) while the command
     * runs: the watchdog stays on guard and kills the run at its lease's deadline.
     */
    @Test
    void aRunWhoseWorkerDiedDiesAtItsLeaseDeadline(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path lease = dir.resolve("lease");
        Files.writeString(lease, Long.toString(System.currentTimeMillis() / 1000 + 2));
        long[] pids = standInWorker(dir, "sleep 60", lease, false);
        long leader = pids[0];
        assertThat(dead(leader)).as("the command runs after its worker died").isFalse();
        Await.until("the orphaned run killed by its kill switch", Duration.ofSeconds(6), () -> dead(leader));
    }

    /**
     * The run's leader ended and its worker lives (its reaper ends the rest of the group): the
     * watchdog leaves at once instead of sleeping on until the group is killed.
     */
    @Test
    void theWatchdogLeavesOnceTheLeaderEndedUnderALiveWorker(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path lease = dir.resolve("lease");
        Files.writeString(lease, Long.toString(System.currentTimeMillis() / 1000 + 60));
        long[] pids = standInWorker(dir, "exit 0", lease, true);
        long group = pids[0];
        Await.until("no process left in the run's group", Duration.ofSeconds(5), () -> groupMembers(group) == 0);
    }

    /**
     * Starts {@code command} through the wrapper from a stand-in worker (a bash holding the run's
     * stdin pipe); the worker exits at once ({@code stays} false, closing the pipe) or lives,
     * closing the pipe once the leader exited, as the JDK does. Returns the leader's pid, which
     * is also the run's process group (setsid).
     */
    private static long[] standInWorker(Path dir, String command, Path lease, boolean stays) throws Exception {
        Path script = dir.resolve("run.sh");
        Files.writeString(script, command);
        Path pidFile = dir.resolve("leader");
        Path fifo = dir.resolve("stdin");
        // The run's stdin is a pipe only the worker writes to (fd 3 here), as the JDK's is.
        String worker = "mkfifo " + fifo + "\n"
                + "setsid bash -c \"$W\" outrun-process-run " + script + " " + lease + " < " + fifo + " &\n"
                + "exec 3> " + fifo + "\n"
                + "echo $! > " + pidFile + "\n"
                + (stays ? "wait $!; exec 3>&-; sleep 8\n" : "exit 0\n");
        ProcessBuilder pb = new ProcessBuilder("bash", "-c", worker).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("W", ProcessSandbox.WRAPPER);
        pb.start();
        String pid = Await.until("the leader's pid", Duration.ofSeconds(5), () -> {
            try {
                String text = Files.exists(pidFile) ? Files.readString(pidFile).strip() : "";
                return text.isEmpty() ? null : text;
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        return new long[] {Long.parseLong(pid)};
    }

    /** Live (not zombie) processes whose process group is {@code pgid}. */
    private static long groupMembers(long pgid) {
        return ProcessHandle.allProcesses().filter(p -> {
            try {
                String stat = Files.readString(Path.of("/proc", Long.toString(p.pid()), "stat"));
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                return !f[0].equals("Z") && Long.parseLong(f[2]) == pgid;
            } catch (java.io.IOException | RuntimeException e) {
                return false;
            }
        }).count();
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
            // The clean-up is periodic: a run caught in its exec (its /proc cmdline not readable
            // yet) is found by a later pass, so pass again until it is.
            Await.until("the stale run found by a clean-up pass", Duration.ofSeconds(5),
                    () -> sandbox.removeLeftovers((id, attempt) -> !id.equals(stale.executionId())) >= 1);
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
