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

/** Every test here runs with runs spawned per run; {@link ProcessSandboxSparesTest} runs them all again on spares. */
class ProcessSandboxTest {

    protected final ProcessSandbox sandbox = newSandbox();

    /** The sandbox the tests use. */
    ProcessSandbox newSandbox() {
        return new ProcessSandbox();
    }

    @org.junit.jupiter.api.AfterEach
    void closeSandbox() {
        sandbox.close();
    }

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
    static void awaitGone(long pid) throws InterruptedException {
        // The probe must be able to say "alive": without /proc it would call everything gone.
        assertThat(dead(ProcessHandle.current().pid())).as("this JVM is seen alive through /proc").isFalse();
        Await.until("process " + pid + " to be gone (a survivor would touch its marker at 2 s)", Duration.ofMillis(1500),
                () -> dead(pid));
    }

    /** Gone, or a zombie: killed but not yet reaped by whoever adopted it, it runs nothing more. */
    static boolean dead(long pid) {
        assertThat(Path.of("/proc/self/stat")).as("these checks read /proc").isRegularFile();
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            char state = stat.charAt(stat.lastIndexOf(')') + 2);
            return state == 'Z' || state == 'X';
        } catch (java.nio.file.NoSuchFileException e) {
            return true; // /proc is there but this pid's entry is not: gone
        } catch (java.io.IOException e) {
            // A process reaped while its stat is read answers ESRCH ("No such process"): gone too.
            if (!Files.exists(Path.of("/proc", Long.toString(pid)))) {
                return true;
            }
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * The node's kill switch outlives its worker: a real JVM (a stand-in worker) starts a run
     * with a lease file and is SIGKILLed; the run lives on until its lease's deadline, then dies
     * with its whole group, and the watchdog, with nothing left to guard, leaves.
     */
    @Test
    void aRunWhoseWorkerWasSigkilledDiesAtItsLeaseDeadlineAndTheWatchdogLeaves(@org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        Path lease = dir.resolve("lease");
        long deadline = System.currentTimeMillis() / 1000 + 3;
        Files.writeString(lease, String.format("%012d%n", deadline));
        Path pids = dir.resolve("pids");
        Process worker = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), StandInWorker.class.getName(), lease.toString(), pids.toString())
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            String[] started = Await.until("the stand-in worker's run started", Duration.ofSeconds(20), () -> {
                String[] parts = read(pids).split("\\s+");
                return parts.length == 4 ? parts : null;
            });
            long watchdog = Long.parseLong(started[0]);
            long leader = Long.parseLong(started[1]);
            long child = Long.parseLong(started[2]);
            long spare = Long.parseLong(started[3]);
            assertThat(dead(spare)).as("a spare waits while its worker lives").isFalse();
            worker.destroyForcibly().waitFor();
            // No pid file, nothing to guard: its stdin closed with the worker, and it left.
            Await.until("the dead worker's waiting spare gone", Duration.ofSeconds(3), () -> dead(spare));
            assertThat(dead(leader)).as("the run lives on after its worker's SIGKILL, until its deadline").isFalse();
            Await.until("the orphaned run killed by the node's watchdog", Duration.ofSeconds(8), () -> dead(leader) && dead(child));
            assertThat(System.currentTimeMillis() / 1000).as("killed only once its deadline passed").isGreaterThan(deadline);
            Await.until("the watchdog gone once nothing is left to guard", Duration.ofSeconds(4), () -> dead(watchdog));
        } finally {
            worker.destroyForcibly();
        }
    }

    /** A stand-in worker for the test above: one run of {@code sleep} with a background child, then it waits. */
    public static final class StandInWorker {
        public static void main(String[] args) throws Exception {
            // With two spares: one serves the run, the other still waits when the worker dies.
            ProcessSandbox sandbox = ProcessSandboxSparesTest.withSpares(2);
            Path pids = Path.of(args[1]);
            Path tmp = Path.of(args[1] + ".tmp");
            sandbox.start(RunSpec.of("sleep 60 & echo $$ $! > " + tmp + "; sleep 60", Duration.ofMinutes(2))
                    .withLeaseFile(Path.of(args[0])));
            String run = Await.until("the run's pids", Duration.ofSeconds(10), () -> read(tmp).strip().isEmpty() ? null : read(tmp).strip());
            if (sandbox.sparesServed() != 1) {
                throw new IllegalStateException("the run was not served by a spare");
            }
            String spares = Await.until("a spare waiting again", Duration.ofSeconds(10),
                    () -> sandbox.sparePids().isEmpty() ? null : sandbox.sparePids().get(0).toString());
            Files.writeString(tmp, sandbox.watchdogPid() + " " + run + " " + spares);
            Files.move(tmp, pids, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            new java.util.concurrent.CountDownLatch(1).await(); // until the test kills this worker
        }
    }

    /**
     * A watchdog that died under a live worker (killed by someone) is started again by the next
     * clean-up pass, and the new one also guards the runs started before.
     */
    @Test
    void aWatchdogKilledUnderALiveWorkerIsReplacedAndGuardsEveryRun(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path lease = dir.resolve("lease");
        Files.writeString(lease, String.format("%012d%n", System.currentTimeMillis() / 1000 + 3600));
        try (ProcessSandbox own = new ProcessSandbox();
             Run first = own.start(RunSpec.of("sleep 60", Duration.ofMinutes(2)).withLeaseFile(lease))) {
            long old = own.watchdogPid();
            ProcessRun.killGroup(old);
            Await.until("the first watchdog dead", Duration.ofSeconds(5), () -> own.watchdogPid() == -1);
            // The periodic clean-up starts another one, though the node starts nothing new.
            own.removeLeftovers((id, epoch) -> true);
            long revived = own.watchdogPid();
            assertThat(revived).as("a new watchdog").isPositive().isNotEqualTo(old);
            try (Run second = own.start(RunSpec.of("sleep 60", Duration.ofMinutes(2)).withLeaseFile(lease))) {
                assertThat(own.watchdogPid()).as("the same new watchdog for the next run").isEqualTo(revived);
                // The lease lapses: the new watchdog kills both runs, the one started before it too.
                Files.writeString(lease, String.format("%012d%n", System.currentTimeMillis() / 1000 - 1));
                assertThat(first.awaitExit(Duration.ofSeconds(5))).map(Exit::exitCode).contains(Exit.SIGKILL_EXIT);
                assertThat(second.awaitExit(Duration.ofSeconds(5))).map(Exit::exitCode).contains(Exit.SIGKILL_EXIT);
            }
        }
    }

    /**
     * Two deployments on one host share the pid directory: a run of another sandbox whose JVM
     * still lives is not judged by this one's clean-up, though this one's database would not
     * call it current; once that sandbox is gone (closed here, as a dead JVM), it is.
     */
    @Test
    void aLiveSandboxsRunsAreNotJudgedByAnotherSandboxsCleanUp() throws Exception {
        ProcessSandbox other = new ProcessSandbox();
        RunSpec spec = RunSpec.of("sleep 60", Duration.ofMinutes(2));
        Run theirs = other.start(spec);
        try {
            Path runs = Path.of(System.getProperty("java.io.tmpdir"), "outrun-process-runs");
            Await.until("its pid written", Duration.ofSeconds(5), () -> {
                try (var files = Files.list(runs)) {
                    return files.anyMatch(f -> f.getFileName().toString().startsWith(spec.executionId() + ".")
                            && !read(f).startsWith("0 ")) ? true : null;
                } catch (java.io.IOException e) {
                    return null;
                }
            });
            sandbox.removeLeftovers((id, epoch) -> false);
            assertThat(theirs.awaitExit(Duration.ofMillis(300))).as("another live sandbox's run left alone").isEmpty();
            other.close(); // its node is gone
            Await.until("the run of a gone sandbox judged and killed", Duration.ofSeconds(5),
                    () -> sandbox.removeLeftovers((id, epoch) -> !id.equals(spec.executionId())) >= 1 ? true : null);
            assertThat(theirs.awaitExit(Duration.ofSeconds(5))).isPresent();
        } finally {
            theirs.close();
            other.close();
        }
    }

    private static String leaseIn(long seconds) {
        return String.format("%012d%n", System.currentTimeMillis() / 1000 + seconds);
    }

    /**
     * Review: a command that ends in {@code exec} (its leader no longer looks like a run) keeps
     * its kill switch across a leftover clean-up pass, which judges a run by its group.
     */
    @Test
    void anExecdCommandKeepsItsKillSwitchAcrossALeftoverPass(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path lease = dir.resolve("lease");
        Files.writeString(lease, leaseIn(3600));
        try (ProcessSandbox own = new ProcessSandbox();
             Run run = own.start(RunSpec.of("echo $$; exec sleep 60", Duration.ofMinutes(2)).withLeaseFile(lease))) {
            long pid = Await.until("the leader's pid", Duration.ofSeconds(5),
                    () -> run.stdout().text().isBlank() ? null : Long.parseLong(run.stdout().text().strip()));
            Await.until("the leader exec'd sleep", Duration.ofSeconds(5), () -> read(Path.of("/proc/" + pid + "/cmdline")).startsWith("sleep"));
            own.removeLeftovers((id, epoch) -> true); // a periodic pass: the run is current
            Files.writeString(lease, leaseIn(-1));
            assertThat(run.awaitExit(Duration.ofSeconds(4))).map(Exit::exitCode).contains(Exit.SIGKILL_EXIT);
        }
    }

    /**
     * Review: the run's bash ended but left a child in its group, then its worker died; the next
     * node's clean-up pass (a stale epoch) must not forget the group: it kills it.
     */
    @Test
    void aLeaderlessGroupOfADeadWorkerIsKilledByTheNextNodesCleanUp() throws Exception {
        ProcessSandbox dead = new ProcessSandbox();
        Run run = dead.start(RunSpec.of("sleep 60 >/dev/null 2>&1 & echo $!; exit 0", Duration.ofMinutes(2)));
        assertThat(run.awaitExit(Duration.ofSeconds(10))).map(Exit::exitCode).contains(0);
        long child = Long.parseLong(run.stdout().text().strip());
        dead.close(); // as the worker's death: nothing more from it
        try (ProcessSandbox next = new ProcessSandbox()) {
            assertThat(next.removeLeftovers((id, epoch) -> false)).as("the group found and killed").isGreaterThanOrEqualTo(1);
            awaitGone(child);
        } finally {
            ProcessRun.killGroup(child);
        }
    }

    /**
     * Review: the worker dies between the spawn and the run writing its pid (widened here by a
     * slow BASH_ENV): the worker's placeholder keeps the watchdog on guard, and the run dies at
     * its deadline.
     */
    @Test
    void aRunWhoseWorkerDiedRightAfterSpawnStillDiesAtItsDeadline(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path lease = dir.resolve("lease");
        long deadline = System.currentTimeMillis() / 1000 + 3;
        Files.writeString(lease, String.format("%012d%n", deadline));
        Path slow = dir.resolve("slow-start");
        Files.writeString(slow, "sleep 1\n");
        Path idFile = dir.resolve("id");
        Process worker = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                System.getProperty("java.class.path"), HaltingWorker.class.getName(), lease.toString(), slow.toString(),
                idFile.toString()).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        assertThat(worker.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        String id = read(idFile).strip();
        Path runs = Path.of(System.getProperty("java.io.tmpdir"), "outrun-process-runs");
        long pid = Await.until("the run's pid in its pid file", Duration.ofSeconds(5), () -> {
            try (var files = Files.list(runs)) {
                return files.filter(f -> f.getFileName().toString().startsWith(id + ".")).findFirst()
                        .map(f -> read(f).split(" ")[0].strip()).filter(p -> !p.isEmpty() && !p.equals("0"))
                        .map(Long::parseLong).orElse(null);
            } catch (java.io.IOException e) {
                return null;
            }
        });
        try {
            assertThat(dead(pid)).as("the run started though its worker was gone").isFalse();
            Await.until("the run killed at its deadline", Duration.ofSeconds(8), () -> dead(pid));
            assertThat(System.currentTimeMillis() / 1000).isGreaterThan(deadline);
        } finally {
            ProcessRun.killGroup(pid);
        }
    }

    /** Starts one run whose bash starts slowly, then halts at once, as a SIGKILL would end it. */
    public static final class HaltingWorker {
        public static void main(String[] args) throws Exception {
            ProcessSandbox sandbox = new ProcessSandbox();
            RunSpec spec = RunSpec.of("sleep 60", Duration.ofMinutes(2)).withLeaseFile(Path.of(args[0]))
                    .withEnv(java.util.Map.of("BASH_ENV", args[1]));
            Files.writeString(Path.of(args[2]), spec.executionId().toString());
            sandbox.start(spec);
            Runtime.getRuntime().halt(0);
        }
    }

    /** Review: the script runs as {@code bash script} ran it: an unbound variable exits 1, not 127. */
    @Test
    void anUnboundVariableExitsOneAsUnderBashScript() throws Exception {
        for (String command : new String[] {"set -u; echo \"$nope\"", "echo \"${NEEDED:?set NEEDED}\""}) {
            try (Run run = sandbox.start(RunSpec.of(command, Duration.ofSeconds(10)))) {
                assertThat(await(run).exitCode()).as(command).isEqualTo(1);
            }
        }
    }

    /** The wrapper's own variables (named {@code _outrun_*}) never replace the command's, nor stay behind. */
    @Test
    void theCommandKeepsEveryVariableOfItsEnvironment(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path lease = dir.resolve("lease");
        Files.writeString(lease, String.format("%012d%n", System.currentTimeMillis() / 1000 + 3600));
        RunSpec spec = RunSpec.of("echo \"$d|$now|$1|$#|${_outrun_d-unset}|${0##*/}\"", Duration.ofSeconds(10)).withLeaseFile(lease)
                .withEnv(java.util.Map.of("d", "dee", "now", "then"));
        try (Run run = sandbox.start(spec)) {
            assertThat(await(run).exitCode()).isZero();
            assertThat(run.stdout().text()).matches("dee\\|then\\|\\|0\\|unset\\|run-.*\\.sh\n");
        }
    }

    static String read(Path file) {
        try {
            return Files.exists(file) ? Files.readString(file) : "";
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
            // The clean-up is periodic: a run whose own pid is not yet written (the worker's
            // placeholder still there) is found by a later pass, so pass again until it is.
            Await.until("the stale run found by a clean-up pass", Duration.ofSeconds(5),
                    () -> sandbox.removeLeftovers((id, attempt) -> !id.equals(stale.executionId())) >= 1);
            assertThat(left.awaitExit(Duration.ofSeconds(5))).isPresent();
            assertThat(kept.awaitExit(Duration.ofMillis(200))).isEmpty();
        } finally {
            left.close();
            kept.close();
        }
    }

    @Test
    void aPromptIsAnsweredLineByLine() throws Exception {
        io.outrun.sandbox.StdinScenarios.aPromptIsAnsweredLineByLine(sandbox, RunSpec.of("true", Duration.ofSeconds(30)));
    }

    /** Review: without bubblewrap, script's session would escape the run's kill (BubblewrapSandboxIT runs one). */
    @Test
    void aTerminalIsRefusedWithoutBubblewrap() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> sandbox.start(RunSpec.of("true", Duration.ofSeconds(30))
                        .withStdin(io.outrun.model.inputs.StdinMode.TTY)))
                .isInstanceOf(io.outrun.sandbox.RunRefusedException.class).hasMessageContaining("bubblewrap");
    }

    @Test
    void withoutStdinTheCommandReadsNothing() throws Exception {
        io.outrun.sandbox.StdinScenarios.withoutStdinTheCommandReadsNothing(sandbox, RunSpec.of("true", Duration.ofSeconds(30)));
    }

    static Exit await(Run run) throws InterruptedException {
        Optional<Exit> exit = run.awaitExit(Duration.ofSeconds(30));
        assertThat(exit).isPresent();
        return exit.get();
    }
}
