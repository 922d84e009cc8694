package io.outrun.sandbox.docker;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.model.Container;
import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.model.output.Captured;
import io.outrun.testing.Requirements;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The Docker backend against the real engine: isolation, limits, output, timeouts, clean-up. */
class DockerSandboxIT {

    /** A node id of this test class alone, so that its leftover check ignores other suites. */
    static final String NODE = "it-" + UUID.randomUUID().toString().substring(0, 8);

    static DockerSandbox sandbox;

    @BeforeAll
    static void startSandbox() {
        Requirements.docker();
        sandbox = new DockerSandbox(DockerSandboxConfig.defaults(NODE));
        sandbox.verify();
    }

    @AfterAll
    static void nothingIsLeftBehind() {
        if (sandbox == null) {
            return;
        }
        sandbox.close();
        assertThat(outrunContainers(NODE)).as("Outrun containers left on node " + NODE).isEmpty();
    }

    static List<Container> outrunContainers(String node) {
        try (DockerClients clients = new DockerClients(DockerSandboxConfig.defaults(node))) {
            return clients.control.listContainersCmd().withShowAll(true)
                    .withLabelFilter(Map.of("outrun", "1", "outrun.node", node)).exec();
        }
    }

    static RunSpec spec(String command) {
        return new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, command, null, null, Map.of(), Duration.ofSeconds(60),
                1024 * 1024, Limits.DEFAULTS, null);
    }

    static Result run(RunSpec spec) throws InterruptedException {
        long start = System.nanoTime();
        try (Run run = sandbox.start(spec)) {
            Exit exit = run.awaitExit(spec.timeout().plusSeconds(30)).orElseThrow();
            return new Result(exit, run.stdout(), run.stderr(), Duration.ofNanos(System.nanoTime() - start));
        }
    }

    static Result run(String command) throws InterruptedException {
        return run(spec(command));
    }

    record Result(Exit exit, Captured stdout, Captured stderr, Duration elapsed) {
        String out() {
            return stdout.text();
        }
    }

    /**
     * Issue 31: a run's API bridge socket, alone in its directory, is at
     * {@link ContainerRecipe#API_SOCKET} in its container (network none), and the command (the
     * sandbox's user) connects to it; the mount is read-only.
     */
    @Test
    void aRunReachesItsApiSocketInItsMountedDirectory() throws Exception {
        try (ApiSocketStandIn api = ApiSocketStandIn.open()) {
            Result r = run(spec("socat -u UNIX-CONNECT:" + ContainerRecipe.API_SOCKET + " - && id -u"
                    + " && (touch " + ContainerRecipe.API_DIR + "/x 2>/dev/null && echo writable || echo read-only)")
                    .withLimits(Limits.DEFAULTS.withApiSocket(api.socket())));
            assertThat(r.out()).as(r.stderr().text()).isEqualTo(ApiSocketStandIn.GREETING + "\n10001\nread-only\n");
        }
    }

    /**
     * Issue 25 #4: a command that kills every process it can see (its kill switch among them,
     * were it the same user) is still killed from inside once its lease's deadline passes, with
     * nobody renewing the lease, as after its worker's SIGKILL.
     */
    /**
     * Issue 27: the default image has the toolchain builds and test suites need, usable by the
     * sandbox's user in its read-only root: a C program compiled and run, a venv made, a node
     * script run, a git repository committed to.
     */
    @Test
    void theDefaultImageHasAWorkingToolchain() throws Exception {
        Result r = run("set -e; cd /work; for t in git make gcc g++ python3 curl jq zip unzip node npm file patch; do"
                + " command -v $t >/dev/null || echo missing:$t; done;"
                + " python3 -m pip --version >/dev/null; python3 -m venv /tmp/venv && /tmp/venv/bin/python -c 'print(\"venv ok\")';"
                + " printf '#include <stdio.h>\\nint main(void){puts(\"cc ok\");return 0;}\\n' > a.c;"
                + " printf 'all:\\n\\tgcc -o a a.c\\n' > Makefile; make -s; ./a;"
                + " node -e 'console.log(\"node ok\")'; npm --version >/dev/null;"
                + " git init -q r && cd r && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x && echo git ok;"
                + " echo '{\"a\":1}' | jq -c .a");
        assertThat(r.exit().exitCode()).as(r.stderr().text()).isZero();
        assertThat(r.out()).isEqualTo("venv ok\ncc ok\nnode ok\ngit ok\n1\n");
    }

    /**
     * Issue 27: a container run gets its secrets as env (a pooled container's too: they travel
     * with the command, never in the container's config), and its captured output has each value
     * as [secret:NAME], also when it is printed in two pieces a second apart, on either stream.
     */
    @Test
    void aRunsSecretsAreItsEnvAndMaskedInItsOutput() throws Exception {
        Map<String, String> secrets = Map.of("API_TOKEN", "tok-8f2a9c41d7", "OTHER", "second-secret-value");
        for (int i = 0; i < 2; i++) { // the first start may be a fresh container, the second a pooled one
            RunSpec spec = spec("echo \"t=$API_TOKEN\"; printf %s \"${API_TOKEN:0:6}\"; sleep 1;"
                    + " echo \"${API_TOKEN:6}\"; echo \"$OTHER\" >&2; [ \"$API_TOKEN\" = tok-8f2a9c41d7 ] && echo same")
                    .withSecrets(secrets);
            assertThat(spec.toString()).doesNotContain("tok-8f2a9c41d7").contains("API_TOKEN");
            Result r = run(spec);
            assertThat(r.exit().exitCode()).as(r.stderr().text()).isZero();
            assertThat(r.out()).isEqualTo("t=[secret:API_TOKEN]\n[secret:API_TOKEN]\nsame\n");
            assertThat(r.stderr().text()).isEqualTo("[secret:OTHER]\n");
        }
    }

    /**
     * Issue 27: a run that asks for no network reaches nothing: not the host's listener on the
     * engine's bridge, not its loopback. The same command on the bridge network does reach it,
     * so the probe can tell.
     */
    @Test
    void aRunWithoutNetworkReachesNothing() throws Exception {
        String gateway = java.net.NetworkInterface.getByName("docker0").inetAddresses()
                .filter(a -> a instanceof java.net.Inet4Address).findFirst().orElseThrow().getHostAddress();
        com.sun.net.httpserver.HttpServer server = com.sun.net.httpserver.HttpServer.create(
                new java.net.InetSocketAddress("0.0.0.0", 0), 8);
        server.createContext("/", x -> {
            byte[] body = "reached".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            x.sendResponseHeaders(200, body.length);
            x.getResponseBody().write(body);
            x.close();
        });
        server.start();
        try {
            int port = server.getAddress().getPort();
            String probe = "for u in http://" + gateway + ":" + port + "/ http://127.0.0.1:" + port + "/; do"
                    + " curl -sS -m 5 \"$u\" 2>/dev/null || echo refused; echo; done";
            Result none = run(probe);
            assertThat(none.out()).isEqualTo("refused\n\nrefused\n\n");
            Result bridged = run(spec(probe).withLimits(new Limits(Limits.DEFAULTS.memoryBytes(), Limits.DEFAULTS.nanoCpus(),
                    Limits.DEFAULTS.pids(), Limits.DEFAULTS.tmpfsBytes(), "bridge")));
            assertThat(bridged.out()).as("the control: on the bridge the same probe reaches the host").startsWith("reached\n");
        } finally {
            server.stop(0);
        }
    }

    /** Issue 25 #12: a child killed for memory inside a script that goes on is reported, the exit its own. */
    @Test
    void aChildKilledForMemoryInAScriptThatGoesOnIsReported() throws Exception {
        RunSpec spec = spec("python3 -c 'b = bytearray(200 << 20); print(len(b))' || echo child-died; echo after; exit 3")
                .withLimits(new Limits(64L << 20, Limits.DEFAULTS.nanoCpus(), Limits.DEFAULTS.pids(),
                        Limits.DEFAULTS.tmpfsBytes(), null));
        Result r = run(spec);
        assertThat(r.exit().exitCode()).isEqualTo(3);
        assertThat(r.exit().oomKilled()).as("the command itself was not killed").isFalse();
        assertThat(r.exit().memoryKill()).as("a process of it was").isTrue();
        assertThat(r.out()).isEqualTo("child-died\nafter\n");
        Result plain = run("echo fine");
        assertThat(plain.exit().memoryKill()).isFalse();
    }

    /** A lease file as a worker writes it, due at {@code deadline} (epoch seconds), never renewed. */
    static java.nio.file.Path leaseFile(java.nio.file.Path dir, long deadline) throws java.io.IOException {
        java.nio.file.Path lease = dir.resolve("lease");
        java.nio.file.Files.writeString(lease, String.format("%012d%n", deadline));
        return lease;
    }

    @Test
    void aCommandThatKillsEveryProcessItSeesStillDiesAtItsLeaseDeadline(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        long deadline = System.currentTimeMillis() / 1000 + 5;
        java.nio.file.Path lease = leaseFile(dir, deadline);
        String killer = "for i in $(seq 200); do for p in /proc/[0-9]*; do q=${p#/proc/}; [ \"$q\" = 1 ] || [ \"$q\" = $$ ]"
                + " || kill -9 \"$q\" 2>/dev/null; done; kill -STOP -1 2>/dev/null; pkill -9 -f outrun-bootstrap; sleep 0.1; done;"
                + " echo survived; sleep 300";
        try (Run run = sandbox.start(spec(killer).withLeaseFile(lease))) {
            Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow(() -> new AssertionError(
                    "the run outlived its lease deadline by 25 s: its kill switch was killed; stderr: " + run.stderr().text()));
            long endedAt = System.currentTimeMillis() / 1000;
            assertThat(endedAt).as("ended after its deadline, not before").isGreaterThanOrEqualTo(deadline);
            assertThat(endedAt - deadline).as("seconds past the deadline").isLessThanOrEqualTo(4);
            assertThat(run.stdout().text()).doesNotContain("survived");
            assertThat(exit.exitCode()).isNotZero();
        }
    }

    /**
     * Review: with stdin open, the watchdog reopened a fifo by its path in /tmp, which the command
     * could replace, then exhaust the pids its fallback sleep needed. Now the fifo is an fd of
     * root's, /tmp is root's (sticky), and the kill switch still fires with every pid taken.
     */
    @Test
    void withStdinOpenACommandThatTakesEveryPidStillDiesAtItsLeaseDeadline(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        long deadline = System.currentTimeMillis() / 1000 + 6;
        java.nio.file.Path lease = leaseFile(dir, deadline);
        String attack = "rm -rf /tmp/.outrun-tick /tmp/.outrun-in 2>/dev/null; mkdir /tmp/.outrun-tick 2>/dev/null;"
                + " ln -s /dev/planted /tmp/.outrun-tick 2>/dev/null; ls -la /tmp >&2;"
                + " python3 -c 'import os, time\nkids = 0\nwhile True:\n  try:\n    if os.fork() == 0:\n      time.sleep(300)\n"
                + "      os._exit(0)\n    kids += 1\n  except OSError:\n    break\nprint(\"held\", kids, flush=True)\ntime.sleep(300)';"
                + " echo survived";
        try (Run run = sandbox.start(spec(attack).withLeaseFile(lease).withStdin(io.outrun.model.inputs.StdinMode.PIPE))) {
            Exit exit = run.awaitExit(Duration.ofSeconds(40)).orElseThrow(() -> new AssertionError(
                    "the run outlived its lease deadline: its kill switch was disabled; stdout: " + run.stdout().text()
                            + " stderr: " + run.stderr().text()));
            long endedAt = System.currentTimeMillis() / 1000;
            assertThat(endedAt - deadline).as("seconds past the deadline").isLessThanOrEqualTo(4);
            assertThat(run.stdout().text()).contains("held").doesNotContain("survived");
            assertThat(exit.exitCode()).isNotZero();
        }
    }

    /**
     * Review: the run's environment reached the root bootstrap (BASH_ENV ran as root in a fresh
     * container; LD_PRELOAD and PATH reached what root execs). It now reaches the command alone,
     * through a file its own first bash sources; names bash owns are refused up front.
     */
    @Test
    void theRunsEnvironmentReachesOnlyTheCommand() throws Exception {
        Map<String, String> env = Map.of("GREETING", "it's \"me\" $(id -u) `x`\nsecond line", "PATH",
                "/nowhere:/usr/bin:/bin", "LD_PRELOAD", "/nowhere/lib.so");
        RunSpec spec = new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, "printf '%s|' \"$GREETING\" \"$PATH\"; id -u", null,
                null, env, Duration.ofSeconds(30), 4096, Limits.DEFAULTS, null);
        Result r = run(spec);
        assertThat(r.out()).isEqualTo("it's \"me\" $(id -u) `x`\nsecond line|/nowhere:/usr/bin:/bin|10001\n");
        for (String owned : List.of("BASH_ENV", "SHELLOPTS", "UID")) {
            RunSpec refused = new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, "true", null, null, Map.of(owned, "x"),
                    Duration.ofSeconds(30), 4096, Limits.DEFAULTS, null);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> sandbox.start(refused)).as(owned)
                    .isInstanceOf(io.outrun.sandbox.RunRefusedException.class).hasMessageContaining("bash owns it");
        }
    }

    /**
     * Review: tmpfs pages count against the container's memory and no process owns them, so a
     * command that fills its tmpfs got the root watchdog (the largest process left) killed by the
     * memory killer, then outlived its lease. The watchdog is now the container's main process:
     * whatever kills it ends the run.
     */
    @Test
    void aCommandThatFillsMemoryWithTmpfsCannotOutliveItsLease(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        long deadline = System.currentTimeMillis() / 1000 + 15;
        java.nio.file.Path lease = leaseFile(dir, deadline);
        String fill = "head -c 50M /dev/zero > /work/a; head -c 50M /dev/zero > /tmp/b; i=0;"
                + " while [ $i -lt 3000 ]; do head -c 65536 /dev/zero > /dev/shm/c$i 2>/dev/null || break; i=$((i+1)); done;"
                + " echo filled $i; sleep 60; echo SURVIVED";
        RunSpec spec = spec(fill).withLeaseFile(lease).withLimits(new Limits(128L << 20, Limits.DEFAULTS.nanoCpus(),
                Limits.DEFAULTS.pids(), Limits.DEFAULTS.tmpfsBytes(), null));
        try (Run run = sandbox.start(spec)) {
            run.awaitExit(Duration.ofSeconds(50)).orElseThrow(() -> new AssertionError(
                    "the run outlived its lease deadline: " + run.stdout().text() + run.stderr().text()));
            assertThat(System.currentTimeMillis() / 1000 - deadline).as("seconds past the deadline").isLessThanOrEqualTo(4);
            assertThat(run.stdout().text()).doesNotContain("SURVIVED");
        }
    }

    /** Review: with stdin open, /dev/stdin reopened after the last write still reads to end of file. */
    @Test
    void devStdinCanBeReopenedAfterTheLastWrite() throws Exception {
        try (Run run = sandbox.start(spec("sleep 1; timeout 10 cat /dev/stdin; echo \"rc=$?\"")
                .withStdin(io.outrun.model.inputs.StdinMode.PIPE))) {
            run.writeStdin("hello\n".getBytes(StandardCharsets.UTF_8));
            run.closeStdin();
            Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
            assertThat(exit.exitCode()).isZero();
            assertThat(run.stdout().text()).isEqualTo("hello\nrc=0\n");
        }
    }

    @Test
    void theCommandRunsUnprivilegedWhileItsBootstrapIsRoot() throws Exception {
        Result r = run("id -u; id -g; grep -E '^Cap(Prm|Eff|Bnd|Inh|Amb)' /proc/self/status | awk '{print $2}' | sort -u;"
                + " grep NoNewPrivs /proc/self/status | awk '{print $2}'");
        assertThat(r.out()).isEqualTo("10001\n10001\n0000000000000000\n1\n");
    }

    @Test
    void aPromptIsAnsweredLineByLine() throws Exception {
        io.outrun.sandbox.StdinScenarios.aPromptIsAnsweredLineByLine(sandbox, spec("true"));
    }

    @Test
    void aTerminalIsATerminal() throws Exception {
        io.outrun.sandbox.StdinScenarios.aTerminalIsATerminal(sandbox, spec("true"));
    }

    @Test
    void withoutStdinTheCommandReadsNothing() throws Exception {
        io.outrun.sandbox.StdinScenarios.withoutStdinTheCommandReadsNothing(sandbox, spec("true"));
    }

    @Test
    void reportsExitCodeAndKeepsStreamsApart() throws Exception {
        Result result = run("echo out; echo err >&2; exit 7");
        assertThat(result.exit()).isEqualTo(new Exit(7, false, false));
        assertThat(result.out()).isEqualTo("out\n");
        assertThat(result.stderr().text()).isEqualTo("err\n");
    }

    @Test
    void aBackstopInsideTheContainerEndsTheRunIfItsWorkerIsGone() throws Exception {
        // The worker enforces the deadline; `timeout` above bash ends an orphaned run 30 s later.
        RunSpec spec = new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, "ps -o args= -p $PPID", null, null, Map.of(),
                Duration.ofSeconds(5), 4096, Limits.DEFAULTS, null);
        // timeout stays root (the command cannot kill it); setpriv drops to 10001 and execs the
        // start script's bash, which execs the command's.
        assertThat(run(spec).out()).isEqualTo("/usr/bin/timeout -s KILL 35 /usr/bin/setpriv --reuid=10001 --regid=10001"
                + " --clear-groups --inh-caps=-all --bounding-set=-all /bin/bash /tmp/.outrun-start\n");
    }

    @Test
    void workdirsTheContainerNeedsAreRefusedAsTheCallersError() {
        for (String workdir : List.of("/proc", "/proc/sys", "/dev/null", "/sys/fs", "/usr/sbin/docker-init", "/work/../proc")) {
            RunSpec spec = new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, "pwd", null, workdir, Map.of(), Duration.ofSeconds(5),
                    4096, Limits.DEFAULTS, null);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> sandbox.start(spec)).as(workdir)
                    .isInstanceOf(io.outrun.sandbox.RunRefusedException.class).hasMessageContaining("workdir");
        }
    }

    @Test
    void anImagesVolumesAreBoundedTmpfsNotHostDisk() throws Exception {
        String image = "outrun-sandbox-volume-it:" + NODE;
        docker("sh", "-c", "id=$(docker create " + DockerSandboxConfig.DEFAULT_IMAGE + ") && docker commit --change 'VOLUME /var/tmp' $id "
                + image + " >/dev/null && docker rm $id >/dev/null");
        try (DockerSandbox withVolume = new DockerSandbox(DockerSandboxConfig.defaults(NODE).withAllowedImages(List.of(image)))) {
            RunSpec spec = new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE,
                    "df --output=fstype,size -B1M /var/tmp | tail -1; dd if=/dev/zero of=/var/tmp/big bs=1M count=300 2>/dev/null"
                            + " && echo wrote-all || echo bounded",
                    image, null, Map.of(), Duration.ofSeconds(60), 4096, Limits.DEFAULTS, null);
            try (Run run = withVolume.start(spec)) {
                assertThat(run.awaitExit(Duration.ofSeconds(60))).isPresent();
                assertThat(run.stdout().text()).startsWith("tmpfs").endsWith("bounded\n");
            }
            // A run that carries its workdir back (artifacts, workspace) has a holder container of
            // the same image: its VOLUME must not leave an anonymous volume behind either.
            Set<String> before = volumes();
            try (Run run = withVolume.start(spec.withFiles(new io.outrun.sandbox.files.RunFiles(List.of(), true, 0, null)))) {
                assertThat(run.awaitExit(Duration.ofSeconds(60))).isPresent();
            }
            assertThat(volumes()).as("volumes left by a file-carrying run").isEqualTo(before);
        } finally {
            docker("docker", "rmi", "-f", image);
        }
    }

    private static Set<String> volumes() throws Exception {
        Process p = new ProcessBuilder("docker", "volume", "ls", "-q").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        // Anonymous volumes only (64 hex digits): Outrun's own workdir volumes have names.
        return Arrays.stream(out.split("\n")).map(String::strip).filter(v -> v.matches("[0-9a-f]{64}"))
                .collect(Collectors.toSet());
    }

    private static void docker(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(String.join(" ", command) + ": " + out).isZero();
    }

    @Test
    void runsAsUnprivilegedUser() throws Exception {
        assertThat(run("id -u; id -g").out()).isEqualTo("10001\n10001\n");
    }

    @Test
    void hasNoCapabilitiesAndNoNewPrivileges() throws Exception {
        String status = run("grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status").out();
        assertThat(status).contains("CapEff:\t0000000000000000", "CapPrm:\t0000000000000000",
                "CapBnd:\t0000000000000000", "NoNewPrivs:\t1");
    }

    @Test
    void seesOnlyLoopback() throws Exception {
        String interfaces = run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").out();
        assertThat(interfaces).isEqualTo("lo\n");
    }

    @Test
    void rootIsReadOnlyWhileWorkdirAndTmpAreWritable() throws Exception {
        Result result = run("pwd; touch /x || echo root-ro; touch /tmp/a && echo tmp-rw; "
                + "echo hi > ./b && echo work-rw; mkdir -p ~/.cache && echo home-rw");
        assertThat(result.out()).isEqualTo("/work\nroot-ro\ntmp-rw\nwork-rw\nhome-rw\n");
        assertThat(result.stderr().text()).contains("Read-only file system");
    }

    @Test
    void seesOnlyTheEnvironmentItAskedFor() throws Exception {
        Result result = run(spec("env").withEnv(Map.of("GREETING", "hello world")));
        Map<String, String> env = Arrays.stream(result.out().split("\n"))
                .map(line -> line.split("=", 2))
                .collect(Collectors.toMap(kv -> kv[0], kv -> kv.length > 1 ? kv[1] : ""));
        assertThat(env).containsEntry("GREETING", "hello world").containsEntry("NO_COLOR", "1")
                .containsEntry("TERM", "dumb").containsEntry("PAGER", "cat").containsEntry("HOME", "/work");
        // bash adds PWD, SHLVL and _; the engine adds HOSTNAME. Nothing of the node's own.
        assertThat(env.keySet()).isSubsetOf(Set.of("GREETING", "NO_COLOR", "TERM", "PAGER", "HOME", "PATH",
                "PWD", "SHLVL", "_", "HOSTNAME", "OLDPWD"));
    }

    @Test
    void megabyteCommandArrivesIntact() throws Exception {
        StringBuilder payload = new StringBuilder();
        Random random = new Random(42);
        while (payload.length() < 1024 * 1024) {
            payload.append(Long.toHexString(random.nextLong())).append(" é ✓ 'quote' \"dq\" $notavar\n");
        }
        String command = "# a comment line " + "x".repeat(1000) + "\n"
                + "sha256sum <<'OUTRUN_EOF' | cut -d' ' -f1\n" + payload + "OUTRUN_EOF\n";
        assertThat(command.getBytes(StandardCharsets.UTF_8).length).isGreaterThan(1024 * 1024);
        byte[] expected = MessageDigest.getInstance("SHA-256").digest(payload.toString().getBytes(StandardCharsets.UTF_8));

        Result result = run(command);

        assertThat(result.exit().exitCode()).as(result.stderr().text()).isZero();
        assertThat(result.out().strip()).isEqualTo(HexFormat.of().formatHex(expected));
    }

    @Test
    void capturesBinaryAndInvalidUtf8Output() throws Exception {
        Result result = run("printf '\\xff\\xfe\\x00ok\\xc3\\x28'; head -c 100000 /dev/urandom >&2");
        assertThat(result.stdout().head()).containsExactly(0xff, 0xfe, 0x00, 'o', 'k', 0xc3, 0x28);
        assertThat(result.out()).contains("ok", "\uFFFD");
        assertThat(result.stderr().totalBytes()).isEqualTo(100_000);
        assertThat(result.stderr().truncated()).isFalse();
        assertThat(result.stderr().text()).isNotEmpty();
    }

    @Test
    void floodedOutputKeepsHeadAndTailWithExactCounts() throws Exception {
        int cap = 64 * 1024;
        Result result = run(spec("echo BEGIN; head -c 200000000 /dev/zero | tr '\\0' x; echo; echo END")
                .withOutputCap(cap));
        Captured out = result.stdout();
        assertThat(result.exit().exitCode()).isZero();
        assertThat(out.totalBytes()).isEqualTo(6 + 200_000_000 + 1 + 4);
        assertThat(out.truncated()).isTrue();
        assertThat(out.head().length + out.tail().length).isEqualTo(cap);
        assertThat(out.droppedBytes()).isEqualTo(out.totalBytes() - cap);
        String text = out.text();
        assertThat(text).startsWith("BEGIN\nxxx").endsWith("xxx\nEND\n")
                .contains(Captured.marker(out.droppedBytes()));
    }

    @Test
    void gigabyteFloodKeepsHeapFlat() throws Exception {
        long before = usedHeapAfterGc();
        long start = System.nanoTime();
        long peak = 0;
        try (Run run = sandbox.start(spec("head -c 1073741824 /dev/zero")
                .withLimits(Limits.DEFAULTS))) {
            while (run.awaitExit(Duration.ofMillis(200)).isEmpty()) {
                peak = Math.max(peak, usedHeap());
            }
            assertThat(run.stdout().totalBytes()).isEqualTo(1L << 30);
            long retained = usedHeapAfterGc() - before;
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.printf("1 GiB flood: %.1f s (%.0f MiB/s); heap retained +%d KiB after GC"
                            + " (two 1 MiB captures expected); peak used heap %d MiB of max %d MiB%n",
                    seconds, 1024 / seconds, retained / 1024, peak >> 20, Runtime.getRuntime().maxMemory() >> 20);
            assertThat(retained).as("heap retained by a 1 GiB flood").isLessThan(16L << 20);
        }
    }

    @Test
    void silentCommandOutlivesTheResponseTimeout() throws Exception {
        DockerSandboxConfig config = DockerSandboxConfig.defaults(NODE).withTimeouts(Duration.ofSeconds(5), Duration.ofSeconds(1));
        try (DockerSandbox shortTimeouts = new DockerSandbox(config); Run run = shortTimeouts.start(spec("sleep 3; echo done"))) {
            Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
            assertThat(exit.exitCode()).isZero();
            assertThat(run.stdout().text()).isEqualTo("done\n");
        }
    }

    @Test
    void timeoutKillsTheWholeTreeWithinTwoSecondsOfTheDeadline() throws Exception {
        RunSpec spec = new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, "trap '' TERM; sleep 100 & sleep 100 & wait",
                null, null, Map.of(), Duration.ofSeconds(2), 4096, Limits.DEFAULTS, null);
        long start = System.nanoTime();
        try (Run run = sandbox.start(spec)) {
            Exit exit = run.awaitExit(Duration.ofSeconds(60)).orElseThrow();
            Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
            System.out.println("timeout of 2 s ended the run after " + elapsed.toMillis() + " ms");
            assertThat(exit.timedOut()).isTrue();
            assertThat(exit.killed()).isFalse();
            assertThat(elapsed).isBetween(Duration.ofSeconds(2), Duration.ofSeconds(4));
            assertNothingSurvives(run);
        }
    }

    @Test
    void theKillSwitchEndsTheWholeRunOnceItsLeaseFileLapsesWithoutAnyCallFromTheWorker() throws Exception {
        // A worker that stops confirming its lease (paused, dead, cut off) stops rewriting the
        // file: the run ends itself, read-only file and all, fork-happy command included.
        java.nio.file.Path file = java.nio.file.Files.createTempFile("outrun-lease-", "");
        java.nio.file.Files.writeString(file, String.format("%012d%n", System.currentTimeMillis() / 1000 + 2));
        java.nio.file.Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        RunSpec spec = new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE,
                "echo x > /run/outrun-lease 2>/dev/null || echo read-only; trap '' TERM; sleep 100 & sleep 100 & wait",
                null, null, Map.of(), Duration.ofSeconds(60), 4096, Limits.DEFAULTS, file);
        long start = System.nanoTime();
        try (Run run = sandbox.start(spec)) {
            Exit exit = run.awaitExit(Duration.ofSeconds(15)).orElseThrow(() -> new AssertionError("the kill switch never fired"));
            Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
            System.out.println("kill switch ended the run " + elapsed.toMillis() + " ms after start (deadline ~2 s)");
            assertThat(exit.exitCode()).isEqualTo(Exit.SIGKILL_EXIT);
            assertThat(exit.killed()).as("not killed by the worker").isFalse();
            assertThat(run.stdout().text()).isEqualTo("read-only\n");
            assertThat(elapsed).isLessThan(Duration.ofSeconds(6));
            assertNothingSurvives(run);
        } finally {
            java.nio.file.Files.deleteIfExists(file);
        }
    }

    @Test
    void theKillSwitchStillFiresAfterTheRunHeldEveryPidItMayForLong() throws Exception {
        // A command at its pids limit (a fork bomb, a runaway build) when its worker stops
        // confirming the lease: the watchdog must wait its second without a fork. A fork that
        // fails for good (bash retries for 15 s) ends a non-interactive bash, watchdog and backstop
        // with it, and the run would outlive its lease for good.
        java.nio.file.Path file = java.nio.file.Files.createTempFile("outrun-lease-", "");
        java.nio.file.Files.writeString(file, String.format("%012d%n", System.currentTimeMillis() / 1000 + 600));
        java.nio.file.Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        String holdEveryPid = "python3 -c 'import os, time\nfull = False\nwhile True:\n  try:\n"
                + "    if os.fork() == 0: os.execv(\"/bin/sleep\", [\"sleep\", \"1000\"])\n"
                + "  except OSError:\n    if not full: print(\"full\", flush=True); full = True\n    time.sleep(0.005)'";
        RunSpec spec = new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, holdEveryPid, null, null, Map.of(),
                Duration.ofSeconds(120), 4096, Limits.DEFAULTS, file);
        try (Run run = sandbox.start(spec)) {
            awaitOutput(run, "full");
            // Longer than bash's fork retries (15 s): the run must not end before its lease lapses.
            assertThat(run.awaitExit(Duration.ofSeconds(20))).as("still running before its lease lapses").isEmpty();
            java.nio.file.Files.writeString(file, String.format("%012d%n", System.currentTimeMillis() / 1000 - 1));
            long lapsed = System.nanoTime();
            Exit exit = run.awaitExit(Duration.ofSeconds(15))
                    .orElseThrow(() -> new AssertionError("the kill switch never fired once the lease lapsed"));
            Duration elapsed = Duration.ofNanos(System.nanoTime() - lapsed);
            System.out.println("kill switch ended the pid-bound run " + elapsed.toMillis() + " ms after its lease lapsed");
            assertThat(exit.exitCode()).isEqualTo(Exit.SIGKILL_EXIT);
            assertThat(exit.killed()).as("not killed by the worker").isFalse();
            assertThat(elapsed).isLessThan(Duration.ofSeconds(4));
            assertNothingSurvives(run);
        } finally {
            java.nio.file.Files.deleteIfExists(file);
        }
    }

    @Test
    void awaitExitAnswersEmptyWhileRunning() throws Exception {
        try (Run run = sandbox.start(spec("sleep 30"))) {
            long start = System.nanoTime();
            assertThat(run.awaitExit(Duration.ofMillis(300))).isEmpty();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
        }
    }

    @Test
    void killEndsTheRunWithinTwoSeconds() throws Exception {
        try (Run run = sandbox.start(spec("echo ready; sleep 100 & exec sleep 100"))) {
            awaitOutput(run, "ready");
            long start = System.nanoTime();
            run.kill();
            Exit exit = run.awaitExit(Duration.ofSeconds(10)).orElseThrow();
            Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
            System.out.println("kill ended the run after " + elapsed.toMillis() + " ms");
            assertThat(exit.killed()).isTrue();
            assertThat(exit.timedOut()).isFalse();
            assertThat(elapsed).isLessThan(Duration.ofSeconds(2));
            assertNothingSurvives(run);
        }
    }

    @Test
    void forkFloodEndsAtTheTimeoutWithoutHurtingTheWorker() throws Exception {
        RunSpec spec = new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, ":(){ :|:& };: ; exec sleep 100", null, null,
                Map.of(), Duration.ofSeconds(5), 64 * 1024, new Limits(256L << 20, 500_000_000L, 64, 64L << 20, null), null);
        Result result = run(spec);
        assertThat(result.exit().timedOut()).isTrue();
        assertThat(result.elapsed()).isLessThan(Duration.ofSeconds(5 + 4));
        assertThat(run("echo still-fine").out()).isEqualTo("still-fine\n");
    }

    @Test
    void memoryHogIsKilledAtItsLimit() throws Exception {
        RunSpec spec = new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, "python3 -c \"b = b'x' * (1 << 30)\"", null, null,
                Map.of(), Duration.ofSeconds(60), 64 * 1024, new Limits(64L << 20, 1_000_000_000L, 64, 64L << 20, null), null);
        Result result = run(spec);
        assertThat(result.exit().exitCode()).isEqualTo(137);
        assertThat(result.exit().oomKilled()).as("the engine's own OOM flag").isTrue();
        assertThat(result.exit().killed()).as("not killed by us").isFalse();
        assertThat(result.exit().timedOut()).isFalse();
        assertThat(result.elapsed()).isLessThan(Duration.ofSeconds(30));
        assertThat(run("echo still-fine").out()).isEqualTo("still-fine\n");
    }

    /** A stopped container has no PID namespace left: no process of the run can survive it. */
    static void assertNothingSurvives(Run run) {
        String id = ((DockerRun) run).containerId();
        try (DockerClients clients = new DockerClients(DockerSandboxConfig.defaults(NODE))) {
            assertThat(clients.control.inspectContainerCmd(id).exec().getState().getRunning()).isFalse();
        }
    }

    static void awaitOutput(Run run, String text) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!run.stdout().text().contains(text)) {
            assertThat(System.nanoTime() - deadline).as("waiting for output " + text).isNegative();
            assertThat(run.awaitExit(Duration.ofMillis(20))).as("run ended before printing " + text).isEmpty();
        }
    }

    static long usedHeap() {
        Runtime runtime = Runtime.getRuntime();
        return runtime.totalMemory() - runtime.freeMemory();
    }

    static long usedHeapAfterGc() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return usedHeap();
    }
}
