package io.outrun.sandbox.process;

import io.outrun.sandbox.Limits;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.testing.Await;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The warm pool of the process sandbox: every test of {@link ProcessSandboxTest} again, its runs
 * served by spares, and what only spares have.
 */
class ProcessSandboxSparesTest extends ProcessSandboxTest {

    /** A sandbox whose {@code n} spares are all waiting. */
    static ProcessSandbox withSpares(int n) {
        ProcessSandbox sandbox = new ProcessSandbox().withPoolSize(n);
        sandbox.prepare(new Sandbox.NodeShape("spares-test", Limits.DEFAULTS, 4, null));
        try {
            Await.until(n + " spares waiting", Duration.ofSeconds(10), () -> sandbox.sparePids().size() >= n ? true : null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        return sandbox;
    }

    @Override
    ProcessSandbox newSandbox() {
        return withSpares(2);
    }

    /**
     * What the command sees (arguments, directory, environment, stdin, shell options and traps)
     * is the same whether a spare served it or its bash was spawned for it.
     */
    @Test
    void aRunOnASpareSeesWhatASpawnedRunSees(@TempDir Path dir) throws Exception {
        Path workdir = Files.createDirectory(dir.resolve("a work dir"));
        Path lease = dir.resolve("lease");
        Files.writeString(lease, String.format("%012d%n", System.currentTimeMillis() / 1000 + 3600));
        Map<String, String> env = Map.of("PLAIN", "x", "SPACED", "two words", "LINES", "one\ntwo", "QUOTE", "it's \"so\"",
                "DOLLAR", "$HOME `id`", "EMPTY", "", "EQ", "=a=b", "PATH", "/usr/bin:/bin", "BIG", "€".repeat(10_000),
                "ODD", "-n \u0001\u007f\\");
        String probe = String.join("\n",
                "echo \"0=${0##*/} #=$# pwd=$PWD old=${OLDPWD-none} lvl=$SHLVL secs=$SECONDS\"; declare -p OLDPWD",
                "env | LC_ALL=C sort | grep -v '^_='",
                "cat; echo \"stdin done $?\"",
                "umask; set +o; shopt -p; trap -p; echo \"$-\"",
                "echo ${BASH_ARGV0##*/} ${#BASH_SOURCE[@]} ${#FUNCNAME[@]} ${_outrun_1-unset} ${_outrun_w-unset}",
                // Every shell variable's name (values of bash's dynamic ones differ by nature):
                // nothing of the spare's own work may be left (BASH_REMATCH, MAPFILE, _outrun_*).
                "echo $(compgen -v | LC_ALL=C sort)");
        RunSpec spec = new RunSpec(java.util.UUID.randomUUID(), 1, 1, "local", "local", probe, null, workdir.toString(), env,
                Duration.ofSeconds(10), 1 << 20, Limits.DEFAULTS, lease);
        String spawned;
        try (ProcessSandbox fresh = new ProcessSandbox(); Run run = fresh.start(spec)) {
            assertThat(await(run).exitCode()).isZero();
            spawned = run.stdout().text();
        }
        long before = sandbox.sparesServed();
        // A spare that waited a while still starts its run at SECONDS=0: wait until every spare is 1.1 s old.
        Await.until("spares that waited a second", Duration.ofSeconds(10), () -> !sandbox.sparePids().isEmpty()
                && sandbox.sparePids().stream().allMatch(pid -> ProcessHandle.of(pid).flatMap(h -> h.info().startInstant())
                        .map(t -> t.isBefore(java.time.Instant.now().minusMillis(1100))).orElse(false)));
        try (Run run = sandbox.start(spec)) {
            assertThat(await(run).exitCode()).isZero();
            assertThat(sandbox.sparesServed()).as("served by a spare").isEqualTo(before + 1);
            String onSpare = run.stdout().text();
            assertThat(onSpare.replaceAll("run-[0-9]+\\.sh", "SCRIPT")).isEqualTo(spawned.replaceAll("run-[0-9]+\\.sh", "SCRIPT"));
            assertThat(onSpare).contains("pwd=" + workdir.toRealPath() + " ").contains("SPACED=two words\n")
                    .contains("LINES=one\n").contains("stdin done 0");
            assertThat(run.stderr().text()).isEmpty();
        }
    }

    /**
     * Review: the length the worker sends a spare was formatted in the JVM's locale, whose digits
     * are not 0-9 in some (Arabic, Persian, Bengali, Marathi): the spare took it for a closed
     * pipe and exited 0, a success that never ran the command.
     */
    @Test
    void aSpareRunsItsCommandWhateverTheJvmsLocale() throws Exception {
        java.util.Locale before = java.util.Locale.getDefault();
        java.util.Locale.setDefault(java.util.Locale.forLanguageTag("ar-EG"));
        try {
            long served = sandbox.sparesServed();
            try (Run run = sandbox.start(RunSpec.of("echo ran; exit 4", Duration.ofSeconds(10)))) {
                assertThat(await(run).exitCode()).isEqualTo(4);
                assertThat(run.stdout().text()).isEqualTo("ran\n");
            }
            assertThat(sandbox.sparesServed()).as("served by a spare").isEqualTo(served + 1);
        } finally {
            java.util.Locale.setDefault(before);
        }
    }

    /** A variable bash reads at start-up ({@code BASH_ENV}) or owns needs a fresh bash: such a run is spawned. */
    @Test
    void aRunThatSetsBashsOwnVariablesIsSpawned(@TempDir Path dir) throws Exception {
        Path startup = dir.resolve("startup");
        Files.writeString(startup, "echo from BASH_ENV\n");
        for (Map<String, String> env : List.of(Map.of("BASH_ENV", startup.toString()), Map.of("SHLVL", "7"),
                Map.of("not-a-name", "x"), Map.of("PS1", "$ "), Map.of("GLOBIGNORE", "a*"), Map.of("LC_CTYPE", "x".repeat(40_000)),
                Map.of("LANG", "C.UTF-8"), Map.of("HUGE", "x".repeat(70_000)))) {
            long before = sandbox.sparesServed();
            try (Run run = sandbox.start(RunSpec.of("echo \"lvl=$SHLVL\"", Duration.ofSeconds(10)).withEnv(env))) {
                assertThat(await(run).exitCode()).isZero();
                assertThat(sandbox.sparesServed()).as("spawned, not served by a spare: " + env).isEqualTo(before);
                if (env.containsKey("BASH_ENV")) {
                    assertThat(run.stdout().text()).isEqualTo("from BASH_ENV\nlvl=1\n");
                }
                if (env.containsKey("SHLVL")) {
                    assertThat(run.stdout().text()).isEqualTo("lvl=8\n");
                }
            }
        }
        assertThat(SpareHandOff.exportable("MY_VAR")).isTrue();
        assertThat(SpareHandOff.exportable("BASHOPTS")).isFalse();
    }

    /**
     * Review: a run's environment must never name the wrapper's own variables: on a spare those
     * held its lease file and pid file, and a lapsed lease still ran. Such a run is spawned, and
     * its lapsed lease refuses it.
     */
    @Test
    void aRunNamingTheWrappersVariablesNeverDisarmsItsLease(@TempDir Path dir) throws Exception {
        Path lease = dir.resolve("lease");
        Files.writeString(lease, String.format("%012d%n", System.currentTimeMillis() / 1000 - 60));
        for (String name : List.of("_outrun_2", "_outrun_3", "_outrun_g", "_outrun_1")) {
            long before = sandbox.sparesServed();
            RunSpec spec = RunSpec.of("echo RAN", Duration.ofSeconds(10)).withLeaseFile(lease)
                    .withEnv(Map.of(name, dir.resolve("elsewhere").toString()));
            try (Run run = sandbox.start(spec)) {
                assertThat(await(run).exitCode()).as(name).isEqualTo(137);
                assertThat(run.stdout().text()).isEmpty();
                assertThat(sandbox.sparesServed()).isEqualTo(before);
            }
        }
    }

    /** Closing the sandbox ends its waiting spares. */
    @Test
    void closeEndsTheWaitingSpares() throws Exception {
        List<Long> spares = sandbox.sparePids();
        assertThat(spares).hasSize(2);
        sandbox.close();
        for (long pid : spares) {
            awaitGone(pid);
        }
    }

    /** A spare killed from outside while it waited is passed over: the run still runs. */
    @Test
    void aSpareKilledWhileWaitingIsPassedOver() throws Exception {
        for (long pid : sandbox.sparePids()) {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
        for (long pid : sandbox.sparePids()) {
            awaitGone(pid);
        }
        try (Run run = sandbox.start(RunSpec.of("echo ran", Duration.ofSeconds(10)))) {
            assertThat(await(run).exitCode()).isZero();
            assertThat(run.stdout().text()).isEqualTo("ran\n");
        }
    }
}
