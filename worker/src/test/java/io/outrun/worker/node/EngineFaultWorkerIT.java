package io.outrun.worker.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.PrivateDockerd;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Engine faults are not the command's failure: real worker JVMs on a Docker engine of this test's
 * own, restarted and handled by an "operator" under running executions.
 */
class EngineFaultWorkerIT {

    private static final int TICKS = 15;
    private static final String TICKING = "for j in $(seq 1 " + TICKS + "); do echo tick; sleep 1; done";

    @Test
    void anEngineRestartWithoutLiveRestoreRedrivesEachRunWhichThenSucceedsWhole() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        int metricsPort = freePort();
        try (PrivateDockerd engine = PrivateDockerd.start(false);
             Core api = Core.open(db, "api");
             WorkerProcess w = worker(db, "ef-restart", engine, "--metrics-port", String.valueOf(metricsPort))) {
            List<UUID> ids = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                ids.add(api.service().submit(Submission.of("alice", TICKING)).execution().id());
            }
            for (UUID id : ids) {
                Await.until("attempt 1 of " + id + " printing", Duration.ofSeconds(60), () -> {
                    Execution e = api.submissions().find(id).orElseThrow();
                    return e.status() == ExecutionStatus.RUNNING && e.stdout().text().contains("tick");
                });
            }
            assertThat(metric(metricsPort, "outrun_node_sandbox_engine_up")).isEqualTo("1.0");

            engine.stopEngine(); // SIGTERM to dockerd, as a package upgrade does
            Await.until("the node's metrics show the engine away", Duration.ofSeconds(30),
                    () -> "0.0".equals(metric(metricsPort, "outrun_node_sandbox_engine_up")));
            engine.startEngine();

            for (UUID id : ids) {
                Execution done = Await.until(id + " ended", Duration.ofSeconds(120),
                        () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
                assertThat(done.status()).as(done.errorCode() + ": " + done.errorMessage()).isEqualTo(ExecutionStatus.SUCCEEDED);
                assertThat(done.attempt()).isEqualTo(2);
                assertThat(done.stdout().text()).isEqualTo("tick\n".repeat(TICKS));
            }
            Await.until("the node's metrics show the engine back", Duration.ofSeconds(30),
                    () -> "1.0".equals(metric(metricsPort, "outrun_node_sandbox_engine_up")));
            assertThat(Double.parseDouble(metric(metricsPort, "outrun_node_runs_lost_total"))).isEqualTo(3.0);
            Await.until("no container left", Duration.ofSeconds(30), () -> noContainers(engine));
            assertThat(w.log()).doesNotContain("leftover clean-up failed").doesNotContain("removing container")
                    .doesNotContain("command_failed");
        }
    }

    @Test
    void anOperatorsDockerStopIsALostAttemptAndExhaustedAttemptsFailWithTheEngineFaultCode() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (PrivateDockerd engine = PrivateDockerd.start(false);
             Core api = Core.open(db, "api");
             WorkerProcess w = worker(db, "ef-stop", engine)) {
            // A command that sends itself SIGTERM ended by itself: its own failure, as before.
            UUID selfKilled = api.service().submit(Submission.of("alice", "echo bye; kill -TERM $$")).execution().id();
            Execution own = Await.until("self-SIGTERM ended", Duration.ofSeconds(60),
                    () -> api.submissions().find(selfKilled).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(own.status()).isEqualTo(ExecutionStatus.FAILED);
            assertThat(own.errorCode()).isEqualTo("command_failed");
            assertThat(own.exitCode()).isEqualTo(143);
            assertThat(own.attempt()).isEqualTo(1);

            UUID id = api.service().submit(Submission.of("alice", "echo started; sleep 100").withMaxAttempts(2))
                    .execution().id();
            stopAttempt(api, engine, id, 1);
            Await.until("re-driven to attempt 2", Duration.ofSeconds(60), () -> {
                Execution e = api.submissions().find(id).orElseThrow();
                return e.attempt() == 2 && e.status() == ExecutionStatus.RUNNING;
            });
            stopAttempt(api, engine, id, 2);
            Execution done = Await.until("ended", Duration.ofSeconds(60),
                    () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(done.status()).isEqualTo(ExecutionStatus.FAILED);
            assertThat(done.errorCode()).isEqualTo("sandbox_lost");
            assertThat(done.errorMessage()).contains("stopped outside Outrun").contains("no attempts remain");
            assertThat(done.attempt()).isEqualTo(2);
            Await.until("no container left", Duration.ofSeconds(30), () -> noContainers(engine));
        }
    }

    @Test
    void withLiveRestoreTheRunsGoOnInTheSameAttemptWithTheGapReported() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (PrivateDockerd engine = PrivateDockerd.start(true);
             Core api = Core.open(db, "api");
             WorkerProcess w = worker(db, "ef-live", engine)) {
            List<UUID> ids = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                ids.add(api.service().submit(Submission.of("alice", TICKING + "; echo last")).execution().id());
            }
            for (UUID id : ids) {
                Await.until("attempt 1 of " + id + " printing", Duration.ofSeconds(60), () -> {
                    Execution e = api.submissions().find(id).orElseThrow();
                    return e.status() == ExecutionStatus.RUNNING && e.stdout().text().contains("tick");
                });
            }
            engine.restart();
            for (UUID id : ids) {
                Execution done = Await.until(id + " ended", Duration.ofSeconds(120),
                        () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
                assertThat(done.status()).as(done.errorCode() + ": " + done.errorMessage()).isEqualTo(ExecutionStatus.SUCCEEDED);
                assertThat(done.attempt()).isEqualTo(1);
                assertThat(done.stdout().text()).startsWith("tick\n").endsWith("last\n")
                        .contains("[outrun: the Docker engine was away");
            }
            Await.until("no container left", Duration.ofSeconds(30), () -> noContainers(engine));
        }
    }

    private static WorkerProcess worker(DatabaseConfig db, String node, PrivateDockerd engine, String... extra)
            throws Exception {
        // No warm pool: these tests find each run's container by its execution label, which only
        // a fresh container carries (a pooled one is made before its run is known).
        List<String> args = new ArrayList<>(List.of("--docker-host", engine.host(), "--cleanup-interval-s", "1",
                "--pool-size", "0"));
        args.addAll(List.of(extra));
        return WorkerProcess.startWith(db, node, 3, "docker", args.toArray(String[]::new));
    }

    /** Stops attempt {@code attempt}'s container with `docker stop`, once it printed. */
    private static void stopAttempt(Core api, PrivateDockerd engine, UUID id, int attempt) throws Exception {
        Await.until("attempt " + attempt + " printing", Duration.ofSeconds(60), () -> {
            Execution e = api.submissions().find(id).orElseThrow();
            return e.status() == ExecutionStatus.RUNNING && e.attempt() == attempt && e.stdout().text().contains("started");
        });
        String container = engine.docker("ps -q --filter label=outrun.execution=" + id
                + " --filter label=outrun.attempt=" + attempt).strip();
        assertThat(container).isNotEmpty();
        engine.docker("stop " + container);
    }

    private static boolean noContainers(PrivateDockerd engine) {
        try {
            return engine.outrunContainers().isEmpty();
        } catch (Exception e) {
            return false;
        }
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** The value of a node metric (first series of that name), or null when unreadable. */
    private static String metric(int port, String name) {
        try {
            HttpResponse<String> r = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString());
            for (String line : r.body().split("\n")) {
                if (line.startsWith(name + "{") || line.startsWith(name + " ")) {
                    return line.substring(line.lastIndexOf(' ') + 1).strip();
                }
            }
            return null;
        } catch (Exception e) {
            return null;
        }
    }
}
