package io.outrun.worker.node;

import io.outrun.worker.lease.LeaseStore;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.core.store.Lease;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A start that the engine completed after the node gave up on it (its start timed out, and so
 * did its removal) leaves a container of a handed-back claim. Its epoch is never live again, so
 * the clean-up removes it, and never takes it for the execution's next claim on the same node.
 */
class HandBackOrphanIT {

    @Test
    void aHandedBackClaimsContainerIsRemovedAndNeverTakenForTheNextClaim() throws Exception {
        Requirements.docker();
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        String node = "orphan-node";
        try (Core api = Core.open(db, "api")) {
            UUID id = api.service().submit(Submission.of("alice", "echo start; sleep 8; echo done")).execution().id();
            // The node claimed it (epoch 1), its start "failed", it handed it back: same node id, same attempt number.
            Execution claimed = Await.until("claimable", Duration.ofSeconds(10),
                    () -> new LeaseStore(api.pool()).claim(id, node + "/earlier", Duration.ofSeconds(30)).orElse(null));
            new LeaseStore(api.pool()).handBack(new Lease(id, claimed.leaseEpoch(), claimed.attempt(), claimed.leaseHolder()), "start timed out", Duration.ZERO)
                    .orElseThrow();
            // ...but the engine did start that container, and nothing removed it.
            String orphan = docker("run", "-d", "--label", "outrun=1", "--label", "outrun.execution=" + id,
                    "--label", "outrun.epoch=" + claimed.leaseEpoch(), "--label", "outrun.attempt=1",
                    "--label", "outrun.node=" + node, "outrun-sandbox:latest", "sleep", "300").strip();
            try (WorkerProcess w = WorkerProcess.startWith(db, node, 1, "docker", "--cleanup-interval-s", "1")) {
                Execution running = Await.until("re-claimed", Duration.ofSeconds(60), () -> api.submissions().find(id)
                        .filter(e -> e.status() == ExecutionStatus.RUNNING && e.stdout().totalBytes() > 0).orElse(null));
                assertThat(running.attempt()).as("a hand-back spends no attempt").isEqualTo(1);
                assertThat(running.leaseEpoch()).as("but never gives its epoch back").isGreaterThan(claimed.leaseEpoch());
                Await.until("the orphan removed while the new claim runs", Duration.ofSeconds(20),
                        () -> docker("ps", "-aq", "--no-trunc", "--filter", "id=" + orphan).isBlank());
                assertThat(api.submissions().find(id).orElseThrow().status()).isEqualTo(ExecutionStatus.RUNNING);
                Execution done = Await.until("ended", Duration.ofSeconds(60),
                        () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
                assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
                assertThat(done.stdout().text()).isEqualTo("start\ndone\n");
            } finally {
                docker("rm", "-f", orphan);
            }
        }
    }

    private static String docker(String... args) {
        try {
            java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of("docker"));
            cmd.addAll(java.util.List.of(args));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor();
            return out;
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
