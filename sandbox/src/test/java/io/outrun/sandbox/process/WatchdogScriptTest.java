package io.outrun.sandbox.process;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.sandbox.script.ForeignLocale;
import io.outrun.testing.Await;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * watchdog.sh ({@link NodeWatchdog#SCRIPT}) under the host's bash, started as NodeWatchdog starts
 * it, with stand-in runs (a bash in a session of its own with a background child, as a run's
 * wrapper may leave), their pid files and lease files, and this test as the worker on its stdin.
 */
class WatchdogScriptTest {

    private static final String TAG = "t1";

    @TempDir
    Path runs;
    private final List<Process> started = new ArrayList<>();

    @AfterEach
    void killStandIns() {
        for (Process p : started) {
            ProcessRun.killGroup(p.pid());
            p.destroyForcibly();
        }
    }

    private static long now() {
        return System.currentTimeMillis() / 1000;
    }

    private Process watchdog(Map<String, String> env) throws IOException {
        List<String> argv = new ArrayList<>(List.of("/usr/bin/setsid"));
        argv.addAll(NodeWatchdog.SCRIPT.inline("outrun-process-watch", runs.toString(), TAG));
        ProcessBuilder builder = new ProcessBuilder(argv);
        builder.environment().clear();
        builder.environment().put("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        builder.environment().putAll(env);
        builder.redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD);
        Process p = builder.start();
        started.add(p);
        return p;
    }

    /** A run: the leader of its own group with a child; its pid file and lease file, as wrapper.sh writes them. */
    private final class StandInRun {
        final Process leader;
        final long child;
        final Path lease;

        StandInRun(String name, String tag, long leaseUntil) throws Exception {
            leader = new ProcessBuilder("/usr/bin/setsid", "/bin/bash", "-c", "sleep 300 & echo $!; wait").start();
            started.add(leader);
            child = Long.parseLong(new java.io.BufferedReader(new java.io.InputStreamReader(leader.getInputStream(),
                    StandardCharsets.US_ASCII)).readLine().strip());
            lease = runs.resolve(name + ".lease");
            leaseUntil(leaseUntil);
            Files.writeString(runs.resolve(name + "." + tag + ".pid"),
                    leader.pid() + " " + RunGroups.startTime(leader.pid()) + " " + lease + "\n");
        }

        void leaseUntil(long epochSeconds) throws IOException {
            Files.writeString(lease, epochSeconds + "\n");
        }

        boolean dead() {
            return !leader.isAlive() && !Files.isDirectory(Path.of("/proc/" + child));
        }
    }

    @Test
    void aRunIsKilledWithItsWholeGroupOnceItsLeaseLapsesUnderAnyLocale() throws Exception {
        for (Map<String, String> env : List.of(Map.<String, String>of(), ForeignLocale.env())) {
            Process watchdog = watchdog(env);
            StandInRun run = new StandInRun("a" + env.size(), TAG, now() + 600);
            Thread.sleep(1500);
            assertThat(run.dead()).as("a current lease keeps the run").isFalse();
            run.leaseUntil(now() - 1);
            Await.until("the run and its child killed", Duration.ofSeconds(4), run::dead);
            assertThat(watchdog.isAlive()).isTrue();
        }
    }

    @Test
    void theWorkersLineKillsWhatIsLeftOfAGroup() throws Exception {
        Process watchdog = watchdog(Map.of());
        StandInRun run = new StandInRun("a", TAG, now() + 600);
        watchdog.getOutputStream().write(("k " + run.leader.pid() + "\n").getBytes(StandardCharsets.US_ASCII));
        watchdog.getOutputStream().flush();
        Await.until("the group killed on the worker's word", Duration.ofSeconds(2), run::dead);
    }

    /** The worker gone (end of file): it guards its live runs to their deadline, then leaves. */
    @Test
    void withTheWorkerGoneItGuardsTheRunsItHasThenLeaves() throws Exception {
        Process watchdog = watchdog(Map.of());
        StandInRun run = new StandInRun("a", TAG, now() + 600);
        watchdog.getOutputStream().close();
        Thread.sleep(1500);
        assertThat(watchdog.isAlive()).as("on guard while a run lives").isTrue();
        run.leaseUntil(now() - 1);
        Await.until("the run killed", Duration.ofSeconds(4), run::dead);
        assertThat(watchdog.waitFor(4, TimeUnit.SECONDS)).as("gone once nothing is left to guard").isTrue();
        assertThat(watchdog.exitValue()).isZero();
    }

    /** The worker's placeholder ("0 0 lease", before the spawn) keeps it on guard until 2 s past the lease. */
    @Test
    void aPlaceholderKeepsItOnGuardUntilTwoSecondsPastTheLease() throws Exception {
        Path lease = runs.resolve("p.lease");
        long deadline = now() + 1;
        Files.writeString(lease, deadline + "\n");
        Files.writeString(runs.resolve("p." + TAG + ".pid"), "0 0 " + lease + "\n");
        Process watchdog = watchdog(Map.of());
        watchdog.getOutputStream().close();
        assertThat(watchdog.waitFor(12, TimeUnit.SECONDS)).isTrue();
        assertThat(now()).as("left no sooner than 2 s past the lease").isGreaterThan(deadline + 2);
    }

    /** A pid handed out again (another start time) or another node's file is not this node's run. */
    @Test
    void onlyItsOwnRunsAreJudged() throws Exception {
        Process watchdog = watchdog(Map.of());
        StandInRun other = new StandInRun("o", "t2", now() - 1);
        StandInRun reused = new StandInRun("r", TAG, now() - 1);
        Files.writeString(runs.resolve("r." + TAG + ".pid"), reused.leader.pid() + " 1 " + reused.lease + "\n");
        StandInRun ours = new StandInRun("a", TAG, now() - 1);
        Await.until("its own lapsed run killed", Duration.ofSeconds(4), ours::dead);
        Thread.sleep(1200);
        assertThat(other.dead()).as("another node's run").isFalse();
        assertThat(reused.dead()).as("a pid with another start time").isFalse();
        assertThat(watchdog.isAlive()).isTrue();
    }
}
