package io.outrun.worker.node;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.docker.DockerSandbox;
import io.outrun.sandbox.docker.DockerSandboxConfig;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import io.outrun.testing.TestDatabase;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two deployments (two databases) on one Docker engine, with the same node id, warm pools and a
 * clean-up every second: each judges only what its own deployment made (label
 * {@code outrun.deployment}), so neither removes the other's runs or pools (issue 25 #3: a second
 * {@code outrun dev} removed the first's taken pooled container, which then ended
 * {@code sandbox_lost}).
 */
class TwoDeploymentsIT {

    @Test
    void twoDeploymentsOnOneEngineKeepEachOthersRunsAndPools() throws Exception {
        Requirements.docker();
        DatabaseConfig dbA = TestDatabase.migrated(DatabaseConfig::new);
        DatabaseConfig dbB = TestDatabase.migrated(DatabaseConfig::new);
        try (Core a = Core.open(dbA, "api-a"); Core b = Core.open(dbB, "api-b");
             WorkerNode nodeA = WorkerNode.start(a, config(), new DockerSandbox(DockerSandboxConfig.defaults("dev")).withPoolSize(2),
                     Limits.DEFAULTS);
             WorkerNode nodeB = WorkerNode.start(b, config(), new DockerSandbox(DockerSandboxConfig.defaults("dev")).withPoolSize(2),
                     Limits.DEFAULTS)) {
            assertThat(a.deployment()).isNotEqualTo(b.deployment());
            List<UUID> runsA = new ArrayList<>();
            List<UUID> runsB = new ArrayList<>();
            for (int round = 0; round < 2; round++) {
                for (int i = 0; i < 3; i++) {
                    runsA.add(a.service().submit(Submission.of("alice", "echo a; sleep 4; echo done")).execution().id());
                    runsB.add(b.service().submit(Submission.of("bob", "echo b; sleep 4; echo done")).execution().id());
                }
                // Each round outlives several clean-ups of both nodes (every second).
                for (UUID id : runsA) {
                    assertSucceeded(a, id);
                }
                for (UUID id : runsB) {
                    assertSucceeded(b, id);
                }
            }
            // Both pools are still there after more clean-ups, each refilled by its own node only.
            long cleanups = System.nanoTime() + Duration.ofSeconds(3).toNanos();
            Await.until("3 s of clean-ups (one a second on each node)", Duration.ofSeconds(30),
                    () -> System.nanoTime() - cleanups >= 0 && pooledNow(a.deployment()) == 2 && pooledNow(b.deployment()) == 2);
            assertThat(pooled(a.deployment())).as("deployment A's warm pool").isEqualTo(2);
            assertThat(pooled(b.deployment())).as("deployment B's warm pool").isEqualTo(2);
        }
    }

    private static WorkerConfig config() {
        WorkerConfig d = WorkerConfig.defaults("dev");
        return new WorkerConfig(d.nodeId(), d.slots(), d.leaseTtl(), d.outputFlush(), d.sweepInterval(), d.pollInterval(),
                Duration.ofSeconds(1), 0, 0, d.leaseDir(), d.limits(), d.dashboardAccess(), null);
    }

    private static void assertSucceeded(Core core, UUID id) throws InterruptedException {
        Execution e = Await.until("end of " + id, Duration.ofSeconds(60),
                () -> core.submissions().find(id).filter(x -> x.status().isTerminal()).orElse(null));
        assertThat(e.status()).as("%s: %s %s", id, e.errorCode(), e.errorMessage()).isEqualTo(ExecutionStatus.SUCCEEDED);
        assertThat(e.attempt()).as("no attempt lost").isEqualTo(1);
    }

    /** Pooled containers of a deployment waiting for a run (not taken). */
    private static int pooledNow(String deployment) {
        try {
            return pooled(deployment);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static int pooled(String deployment) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("docker", "ps", "--filter", "label=outrun.pool=1", "--filter",
                "label=outrun.deployment=" + deployment, "--format", "{{.Names}}").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        p.waitFor();
        // A taken one is renamed after its run (outrun-<execution>-e<epoch>); a waiting one keeps the engine's name.
        return (int) out.lines().filter(n -> !n.isBlank() && !n.startsWith("outrun-")).count();
    }
}
