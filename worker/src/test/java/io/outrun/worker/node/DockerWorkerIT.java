package io.outrun.worker.node;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Real worker JVMs with the Docker sandbox: runs locked down, and leaves no container behind, even after SIGKILL. */
class DockerWorkerIT {

    @BeforeAll
    static void requireDocker() {
        Requirements.docker(); // fails under CI=true, skips with the reason elsewhere
    }

    @Test
    void runsInTheLockedDownSandboxAndRemovesItsContainer() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core api = Core.open(db, "api");
             WorkerProcess w = WorkerProcess.startWith(db, "docker-1", 2, "docker", "--image-allow", "allowed/*")) {
            UUID id = api.service().submit(Submission.of("alice", "id -u; touch /not-allowed 2>/dev/null || echo read-only;"
                    + " echo \"$OUTRUN_EXECUTION_ID $OUTRUN_ATTEMPT $OUTRUN_OWNER\"")).execution().id();
            Execution done = Await.until("end", Duration.ofSeconds(60),
                    () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
            assertThat(done.stdout().text()).isEqualTo("10001\nread-only\n" + id + " 1 alice\n");
            Await.until("container removed", Duration.ofSeconds(10), () -> containers(id).isEmpty());

            // An image the operator did not allow, or that no worker has, is the caller's error:
            // failed at once with a clear code, never retried.
            assertRejected(api, "debian:12", "image_not_allowed");
            assertRejected(api, "allowed/missing:1", "image_not_found");
        }
    }

    @Test
    void aRunGetsTheResourcesItAskedForAndOthersTheNodesDefaults() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        // cgroup v2 files where the engine has them, v1 otherwise.
        String probe = "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes;"
                + " cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max;"
                + " cut -d' ' -f1 /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us;"
                + " df -m /work | awk 'NR==2 {print $2}'";
        try (Core api = Core.open(db, "api");
             WorkerProcess w = WorkerProcess.startWith(db, "docker-res", 2, "docker", "--memory-mb", "256",
                     "--pids", "128", "--cpus", "1", "--tmpfs-mb", "32")) {
            UUID asked = api.service().submit(Submission.of("alice", probe)
                    .withResources(new io.outrun.core.execution.Resources(64, 500, 32, 8))).execution().id();
            UUID defaults = api.service().submit(Submission.of("alice", probe)).execution().id();
            Execution a = Await.until("end", Duration.ofSeconds(60),
                    () -> api.submissions().find(asked).filter(e -> e.status().isTerminal()).orElse(null));
            Execution d = Await.until("end", Duration.ofSeconds(60),
                    () -> api.submissions().find(defaults).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(a.stdout().text()).as(a.stderr().text()).isEqualTo((64L << 20) + "\n32\n50000\n8\n");
            assertThat(d.stdout().text()).as(d.stderr().text()).isEqualTo((256L << 20) + "\n128\n100000\n32\n");
        }
    }

    @Test
    void sigkilledWorkersContainerIsRemovedAndTheExecutionRedriven() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core api = Core.open(db, "api")) {
            UUID id = api.service().submit(Submission.of("alice", "echo attempt; sleep 120")).execution().id();
            // No warm pool: the test follows the run's container by its execution label.
            try (WorkerProcess a = WorkerProcess.startWith(db, "docker-a", 1, "docker", "--pool-size", "0")) {
                Await.until("running on a", Duration.ofSeconds(60), () -> api.submissions().find(id).orElseThrow().status() == ExecutionStatus.RUNNING);
                Await.until("container of attempt 1", Duration.ofSeconds(20), () -> containers(id).size() == 1);
                a.kill();
            }
            assertThat(containers(id)).as("a SIGKILLed worker leaves its container running").hasSize(1);
            try (WorkerProcess b = WorkerProcess.startWith(db, "docker-b", 1, "docker", "--cleanup-interval-s", "2",
                    "--pool-size", "0")) {
                Await.until("attempt 2 running on b", Duration.ofSeconds(40), () -> {
                    Execution e = api.submissions().find(id).orElseThrow();
                    return e.status() == ExecutionStatus.RUNNING && e.attempt() == 2 && e.leaseHolder().startsWith("docker-b/");
                });
                Await.until("only attempt 2's container left", Duration.ofSeconds(20),
                        () -> containers(id).equals(List.of("2")));
                api.service().cancel(id, "alice");
                Execution done = Await.until("cancelled", Duration.ofSeconds(10),
                        () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
                assertThat(done.status()).isEqualTo(ExecutionStatus.CANCELLED);
                Await.until("no container left", Duration.ofSeconds(10), () -> containers(id).isEmpty());
            }
        }
    }

    private static void assertRejected(Core api, String image, String code) throws InterruptedException {
        Submission s = Submission.builder().owner("alice").command("true").image(image).timeoutMs(60_000)
                .maxOutputBytes(1 << 20).maxAttempts(3).build();
        UUID id = api.service().submit(s).execution().id();
        Execution rejected = Await.until(image + " rejected", Duration.ofSeconds(30),
                () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
        assertThat(rejected.status()).isEqualTo(ExecutionStatus.FAILED);
        assertThat(rejected.errorCode()).isEqualTo(code);
        assertThat(rejected.errorMessage()).contains(image);
        assertThat(rejected.attempt()).isEqualTo(1);
    }

    /** Attempts of the execution's containers on this engine (running or not). */
    @Test
    void aSigkilledWorkersWarmPoolIsRemovedOnceItsProcessStopsBeating() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        String dead = "docker-pool-a-" + UUID.randomUUID().toString().substring(0, 6);
        try (WorkerProcess a = WorkerProcess.startWith(db, dead, 2, "docker", "--lease-ttl-ms", "3000")) {
            Await.until("a warm pool of 2 on " + dead, Duration.ofSeconds(60), () -> pooled(dead).size() == 2);
            a.kill();
        }
        assertThat(pooled(dead)).as("a SIGKILLed worker leaves its pool behind").hasSize(2);
        // Another node's clean-up (engine-wide, as the CLI's) removes them once the dead process's
        // heartbeat is 3 lease ttls old.
        try (WorkerProcess b = WorkerProcess.startWith(db, dead + "-b", 1, "docker", "--pool-size", "0",
                "--cleanup-interval-s", "1", "--lease-ttl-ms", "3000")) {
            Await.until("the dead worker's pool removed", Duration.ofSeconds(60), () -> pooled(dead).isEmpty());
        }
    }

    /** Pooled containers of node {@code node} (running or not). */
    private static List<String> pooled(String node) {
        try {
            Process p = new ProcessBuilder("docker", "ps", "-aq", "--filter", "label=outrun.pool=1", "--filter",
                    "label=outrun.node=" + node).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            p.waitFor();
            return out.isEmpty() ? List.of() : List.of(out.split("\\s+"));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static List<String> containers(UUID id) {
        try {
            Process p = new ProcessBuilder("docker", "ps", "-a", "--filter", "label=outrun.execution=" + id,
                    "--format", "{{.Label \"outrun.attempt\"}}").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            p.waitFor();
            return out.isEmpty() ? List.of() : List.of(out.split("\\s+"));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
