package io.outrun.worker.node;

import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** A worker's own /metrics: its slots, runs and their ends, heartbeat, JobRunr and the JVM. */
class NodeMetricsIT {

    @Test
    void aNodeServesItsOwnMetricsForPrometheus() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        try (Core api = Core.open(db, "api");
             WorkerNode node = WorkerNode.open(db, WorkerConfig.defaults("metered").withMetricsPort(port),
                     new ProcessSandbox(), Limits.DEFAULTS)) {
            UUID ok = api.service().submit(Submission.of("alice", "true")).execution().id();
            UUID bad = api.service().submit(Submission.of("alice", "exit 3")).execution().id();
            Await.until("both ended", Duration.ofSeconds(20), () -> api.submissions().find(ok).orElseThrow().status().isTerminal()
                    && api.submissions().find(bad).orElseThrow().status() == ExecutionStatus.FAILED);

            // A node counts an end after its write commits and frees the slot just after: wait for both.
            HttpClient http = HttpClient.newHttpClient();
            HttpRequest scrape = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build();
            String body = Await.until("both ends counted", Duration.ofSeconds(10), () -> {
                try {
                    HttpResponse<String> r = http.send(scrape, HttpResponse.BodyHandlers.ofString());
                    assertThat(r.statusCode()).isEqualTo(200);
                    return r.body().contains("outrun_node_runs{node=\"metered\"} 0.0")
                            && r.body().contains("status=\"failed\"} 1.0") ? r.body() : null;
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            assertThat(body)
                    .contains("outrun_node_slots{node=\"metered\"} 4.0")
                    .contains("outrun_node_runs{node=\"metered\"} 0.0")
                    .contains("outrun_node_runs_ended_total{node=\"metered\",status=\"succeeded\"} 1.0")
                    .contains("outrun_node_runs_ended_total{node=\"metered\",status=\"failed\"} 1.0")
                    .contains("outrun_node_handbacks_total{node=\"metered\"} 0.0")
                    .contains("outrun_node_leases_lost_total{node=\"metered\"} 0.0")
                    .contains("outrun_node_jobrunr_running{node=\"metered\"} 1.0")
                    .containsPattern("outrun_node_heartbeat_age_seconds\\{node=\"metered\"} [0-9.]+")
                    .contains("jvm_memory_used_bytes");
        }
    }
}
