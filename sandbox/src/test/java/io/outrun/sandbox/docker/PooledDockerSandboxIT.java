package io.outrun.sandbox.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.sandbox.Limits;
import com.github.dockerjava.api.command.InspectContainerResponse;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every test of {@link DockerSandboxIT} (hardening, limits, output, timeouts, the kill switch)
 * again, each run served by a container of the warm pool: a pooled container must be the very
 * container a fresh one is. Plus what only a pool does.
 */
class PooledDockerSandboxIT extends DockerSandboxIT {

    static final int POOL = 2;
    static final String INCARNATION = NODE + "/pooled";

    /** Hides {@link DockerSandboxIT#startSandbox}: the same sandbox with a warm pool. */
    @BeforeAll
    static void startSandbox() {
        Requirements.docker();
        sandbox = new DockerSandbox(DockerSandboxConfig.defaults(NODE)).withPoolSize(POOL).withApiRelay();
        sandbox.verify();
        // The lease files of the tests are temp files: the pool's live beside them (a hard link).
        sandbox.prepare(new Sandbox.NodeShape(INCARNATION, Limits.DEFAULTS, 4, Path.of(System.getProperty("java.io.tmpdir"))));
    }

    /** Each test's runs find the pool full, so they run pooled, not in a fresh fallback. */
    @BeforeEach
    void poolIsFull() throws InterruptedException {
        awaitPoolFull();
    }

    static void awaitPoolFull() throws InterruptedException {
        Await.until("the warm pool to refill", Duration.ofSeconds(60), () -> sandbox.poolWaiting() >= POOL);
    }

    /**
     * A run with a lease file (every worker's run, and every pooled container) has its backstop in
     * the kill-switch watchdog rather than in {@code timeout}: a run that no worker ever ends or
     * kills (here: nobody waits on it, so nobody enforces its deadline) dies at its timeout plus
     * {@link ContainerRecipe#BACKSTOP_GRACE_S}, killed from inside.
     */
    @Override
    @Test
    void aBackstopInsideTheContainerEndsTheRunIfItsWorkerIsGone() throws Exception {
        RunSpec spec = new RunSpec(java.util.UUID.randomUUID(), 1, 1, NODE, NODE, "sleep 600", null, null, java.util.Map.of(),
                Duration.ofSeconds(1), 4096, Limits.DEFAULTS, null);
        long started = System.nanoTime();
        try (Run run = sandbox.start(spec);
             DockerClients clients = new DockerClients(DockerSandboxConfig.defaults(NODE))) {
            String id = ((DockerRun) run).containerId();
            InspectContainerResponse.ContainerState state = Await.until("the backstop to end the orphaned run",
                    Duration.ofSeconds(1 + ContainerRecipe.BACKSTOP_GRACE_S + 15), () -> {
                        InspectContainerResponse.ContainerState s = clients.control.inspectContainerCmd(id).exec().getState();
                        return s.getRunning() ? null : s;
                    });
            double seconds = (System.nanoTime() - started) / 1e9;
            assertThat(state.getExitCodeLong()).isEqualTo(137L);
            assertThat(seconds).as("not before the timeout plus the grace").isGreaterThanOrEqualTo(ContainerRecipe.BACKSTOP_GRACE_S);
        }
    }

    @Test
    void aPooledContainerServesExactlyOneRunAndIsRemovedWithIt() throws Exception {
        long before = sandbox.pooledRuns();
        String id;
        try (Run run = sandbox.start(spec("echo served"))) {
            id = ((DockerRun) run).containerId();
            assertThat(run.awaitExit(Duration.ofSeconds(30)).orElseThrow().exitCode()).isZero();
            assertThat(run.stdout().text()).isEqualTo("served\n");
        }
        assertThat(sandbox.pooledRuns()).isEqualTo(before + 1);
        List<String> left = outrunContainers(NODE).stream().map(c -> c.getId()).toList();
        assertThat(left).as("the used container is removed, never given back").doesNotContain(id);
        awaitPoolFull();
        assertThat(outrunContainers(NODE).stream().map(c -> c.getId()).toList()).doesNotContain(id)
                .hasSize(POOL);
    }

    @Test
    void aTakenContainerIsNamedForItsRun() throws Exception {
        RunSpec spec = spec("sleep 20");
        try (Run run = sandbox.start(spec);
             DockerClients clients = new DockerClients(DockerSandboxConfig.defaults(NODE))) {
            String id = ((DockerRun) run).containerId();
            Await.until("the container to be named " + ContainerRecipe.name(spec), Duration.ofSeconds(15),
                    () -> clients.control.inspectContainerCmd(id).exec().getName().equals("/" + ContainerRecipe.name(spec)));
            run.kill();
        }
    }

    /**
     * A pooled container can end while it waits (its idle time is up after an hour on a quiet
     * node, the OOM killer, an operator): the attach to it fails, and the run it was to serve
     * must go to a fresh container, never end as the dead container's exit without having run.
     */
    @Test
    void aPooledContainerThatEndedWhileWaitingHandsItsRunToAFreshOne() throws Exception {
        List<String> waiting;
        try (DockerClients clients = new DockerClients(DockerSandboxConfig.defaults(NODE))) {
            waiting = clients.control.listContainersCmd()
                    .withLabelFilter(java.util.Map.of("outrun.node", NODE, ContainerRecipe.LABEL_POOL, "1")).exec()
                    .stream().map(c -> c.getId()).toList();
            assertThat(waiting).hasSize(POOL);
            for (String id : waiting) {
                clients.control.killContainerCmd(id).exec();
                clients.control.waitContainerCmd(id).start().awaitStatusCode(10, java.util.concurrent.TimeUnit.SECONDS);
            }
        }
        for (int i = 0; i < POOL; i++) {
            Result result = run(spec("echo ran-" + i));
            assertThat(result.out()).as("run " + i + " ran (exit " + result.exit() + ")").isEqualTo("ran-" + i + "\n");
            assertThat(result.exit().exitCode()).isZero();
        }
    }

    /**
     * Issue 31's regression: every run of a node with an API bridge has a socket of its own, and
     * still takes a pooled container; its socket is linked into the container's own API
     * directory, which goes with the container.
     */
    @Test
    void aRunWithAnApiSocketTakesAPooledContainerAndReachesItsSocket() throws Exception {
        long before = sandbox.pooledRuns();
        String poolDir;
        try (ApiSocketStandIn api = ApiSocketStandIn.open()) {
            Result r = run(spec("socat -u UNIX-CONNECT:" + ContainerRecipe.API_SOCKET + " - &&"
                    + " grep -o 'pool-[0-9a-f-]*[.]api' /proc/self/mountinfo")
                    .withLimits(Limits.DEFAULTS.withApiSocket(api.socket())));
            String[] out = r.out().split("\n");
            assertThat(out).as(r.out() + r.stderr().text()).hasSize(2);
            assertThat(out[0]).isEqualTo(ApiSocketStandIn.GREETING);
            poolDir = out[1];
        }
        assertThat(sandbox.pooledRuns()).isEqualTo(before + 1);
        Path leaseDir = Path.of(System.getProperty("java.io.tmpdir"));
        // Issue 42: the relay (127.0.0.1:7171 to the socket) listens before the run comes, with no
        // line before the command; a fresh container (other limits) starts it before its command.
        String viaRelay = "(: </dev/tcp/127.0.0.1/" + Limits.API_RELAY_PORT + ") 2>/dev/null && echo open || echo closed;"
                + " exec 3<>/dev/tcp/127.0.0.1/" + Limits.API_RELAY_PORT + "; read -r g <&3; echo \"$g\"; id -u";
        Limits fresh = new Limits(256L << 20, Limits.DEFAULTS.nanoCpus(), Limits.DEFAULTS.pids(), Limits.DEFAULTS.tmpfsBytes(),
                Limits.DEFAULTS.network());
        for (Limits limits : List.of(Limits.DEFAULTS, fresh)) {
            long pooled = sandbox.pooledRuns();
            try (ApiSocketStandIn api = ApiSocketStandIn.open()) {
                Result r = run(spec(viaRelay).withLimits(limits.withApiSocket(api.socket())));
                assertThat(r.out()).as(r.out() + r.stderr().text()).isEqualTo("open\n" + ApiSocketStandIn.GREETING + "\n10001\n");
            }
            assertThat(sandbox.pooledRuns()).as("pooled or fresh").isEqualTo(limits == fresh ? pooled : pooled + 1);
        }
        assertThat(leaseDir.resolve(poolDir)).as("the pooled container's API directory goes with it").doesNotExist();
        assertThat(leaseDir.resolve(poolDir.substring(0, poolDir.length() - WarmPool.API_DIR_SUFFIX.length())))
                .as("and its lease file").doesNotExist();
    }

    @Test
    void aRunWithOtherLimitsGetsAFreshContainer() throws Exception {
        long before = sandbox.pooledRuns();
        Limits other = new Limits(256L << 20, Limits.DEFAULTS.nanoCpus(), Limits.DEFAULTS.pids(),
                Limits.DEFAULTS.tmpfsBytes(), Limits.DEFAULTS.network());
        assertThat(run(spec("cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes")
                .withLimits(other)).out().trim()).isEqualTo(Long.toString(256L << 20));
        assertThat(sandbox.pooledRuns()).isEqualTo(before);
    }

    @Test
    void theEnvironmentTravelsWithTheCommandQuotesAndAll() throws Exception {
        String tricky = "it's \"quoted\" $HOME `x` \\ \nsecond line";
        assertThat(run(spec("printf '%s' \"$TRICKY\"").withEnv(java.util.Map.of("TRICKY", tricky))).out())
                .isEqualTo(tricky);
    }

    /** The bootstrap's own shell variables are its business: a run's variable of the same name keeps its value. */
    @Test
    void aRunsVariableNamedLikeOneOfTheBootstrapsKeepsItsValue() throws Exception {
        long before = sandbox.pooledRuns();
        assertThat(run(spec("printf '%s' \"$ev\"").withEnv(java.util.Map.of("ev", "kept"))).out()).isEqualTo("kept");
        assertThat(sandbox.pooledRuns()).isEqualTo(before + 1);
    }
}
