package io.outrun.worker.node;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.api.http.ApiHarness;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import io.outrun.testing.TestDatabase;
import java.io.IOException;
import java.io.OutputStream;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The database's data disk fills up (issue 25): PostgreSQL still answers, but stores nothing
 * new. {@code /health} must say so (it said ok), a submit must be refused as such rather than
 * answered 202 into a database that cannot run it, no attempt may be spent meanwhile, and once
 * space is freed everything accepted runs.
 *
 * <p>The database lives in a tablespace on a small tmpfs of its own (root mounts it), so the
 * shared test server's WAL and catalogs keep their room.
 */
class DiskFullIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void aFullDataDiskIsReportedAndNothingIsLost(@TempDir Path dir) throws Exception {
        Requirements.root("mounting a small tmpfs for the database's data");
        Path disk = Files.createDirectory(dir.resolve("disk"));
        sh("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", disk.toString());
        DatabaseConfig db = null;
        try {
            Path space = Files.createDirectory(disk.resolve("pg"));
            db = TestDatabase.migratedIn(space, DatabaseConfig::new);
            try (ApiHarness api = ApiHarness.start(db)) {
                WorkerNode worker = WorkerNode.start(api.core(), WorkerConfig.defaults("w-disk"),
                        new ProcessSandbox().isolated(List.of()), Limits.DEFAULTS);
                try {
                    String before = submit(api, "echo before").path("executionId").asText();
                    HttpResponse<String> keyed = submitWithKey(api, "echo keyed", "disk-full-key");
                    assertThat(keyed.statusCode()).as(keyed.body()).isEqualTo(202);
                    assertThat(end(api, before).path("status").asText()).isEqualTo("succeeded");
                    assertThat(api.send("GET", "/health", null, null).statusCode()).isEqualTo(200);

                    fill(disk.resolve("filler"));
                    // Submits until one is refused: the executions table's last page may have room
                    // for some rows, which are stored and run later; once a write fails for the
                    // disk, the node refuses submits before writing.
                    List<String> accepted = new ArrayList<>();
                    HttpResponse<String> refused = null;
                    for (int i = 0; i < 500 && refused == null; i++) {
                        HttpResponse<String> r = api.send("POST", "/v1/executions", api.aliceToken,
                                "{\"command\":\"echo during-" + i + "\"}");
                        if (r.statusCode() == 202) {
                            accepted.add(JSON.readTree(r.body()).path("executionId").asText());
                        } else {
                            refused = r;
                        }
                    }
                    assertThat(refused).as("a submit refused while the disk is full").isNotNull();
                    assertDiskFull(refused);
                    assertDiskFull(api.send("GET", "/health", null, null));
                    // The probe's finding holds submits back at once, whatever room a page has left.
                    assertDiskFull(api.send("POST", "/v1/executions", api.aliceToken, "{\"command\":\"echo refused\"}"));
                    // A retry of a submission accepted before is answered as accepted, full disk or not.
                    HttpResponse<String> replay = submitWithKey(api, "echo keyed", "disk-full-key");
                    assertThat(replay.statusCode()).as(replay.body()).isIn(200, 202); // 200 once it has ended
                    assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
                    System.out.printf("DISK FULL: %d submits stored into pages with room, then %d %s%n",
                            accepted.size(), refused.statusCode(), JSON.readTree(refused.body()).path("error").path("code").asText());

                    Files.delete(disk.resolve("filler"));
                    // Nobody probes /health now: refused submits must not keep the node refusing,
                    // so one is accepted once the window has passed.
                    String[] after = new String[1];
                    Await.until("a submit accepted once space is freed, without /health", Duration.ofSeconds(30), () -> {
                        HttpResponse<String> r = api.send("POST", "/v1/executions", api.aliceToken, "{\"command\":\"echo after\"}");
                        if (r.statusCode() == 202) {
                            after[0] = tree(r.body()).path("executionId").asText();
                            return true;
                        }
                        // Retried every 50 ms: a refusal must not re-arm the window it comes from.
                        assertThat(tree(r.body()).path("error").path("code").asText()).isEqualTo("database_disk_full");
                        return false;
                    });
                    accepted.add(after[0]);
                    accepted.add(tree(keyed.body()).path("executionId").asText());
                    Await.until("health ok once space is freed", Duration.ofSeconds(30),
                            () -> api.send("GET", "/health", null, null).statusCode() == 200);
                    for (String id : accepted) {
                        JsonNode done = end(api, id);
                        assertThat(done.path("status").asText()).as(done.toString()).isEqualTo("succeeded");
                        assertThat(done.path("attempt").asInt()).as("no attempt spent while the disk was full: " + done)
                                .isEqualTo(1);
                    }
                } finally {
                    worker.close();
                }
            }
        } finally {
            if (db != null) {
                TestDatabase.drop(db.url());
            }
            sh("umount", "-l", disk.toString());
        }
    }

    private static void assertDiskFull(HttpResponse<String> r) throws IOException {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
        assertThat(r.headers().firstValue("Retry-After")).hasValue("30");
        JsonNode body = JSON.readTree(r.body());
        assertThat(body.path("error").path("code").asText()).as(r.body()).isEqualTo("database_disk_full");
        assertThat(body.path("guidance").asText()).contains("free space");
        assertThat(r.body()).doesNotContain("Exception");
    }

    private static JsonNode submit(ApiHarness api, String command) throws IOException {
        HttpResponse<String> r = api.send("POST", "/v1/executions", api.aliceToken, "{\"command\":\"" + command + "\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(202);
        return JSON.readTree(r.body());
    }

    private static HttpResponse<String> submitWithKey(ApiHarness api, String command, String key) throws Exception {
        java.net.http.HttpRequest request = java.net.http.HttpRequest.newBuilder(api.base().resolve("/v1/executions"))
                .header("Authorization", "Bearer " + api.aliceToken).header("Content-Type", "application/json")
                .header("Idempotency-Key", key)
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"command\":\"" + command + "\"}")).build();
        return java.net.http.HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode end(ApiHarness api, String id) throws Exception {
        return Await.until(id + " to end", Duration.ofSeconds(60), () -> {
            HttpResponse<String> r = api.send("GET", "/v1/executions/" + id, api.aliceToken, null);
            JsonNode v = r.statusCode() == 200 ? tree(r.body()) : null;
            return v != null && List.of("succeeded", "failed", "cancelled").contains(v.path("status").asText()) ? v : null;
        });
    }

    private static JsonNode tree(String body) {
        try {
            return JSON.readTree(body);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Writes zeros to {@code file} until the file system has no room left. */
    private static void fill(Path file) throws IOException {
        byte[] block = new byte[1 << 16];
        try (OutputStream out = Files.newOutputStream(file)) {
            while (true) {
                out.write(block);
            }
        } catch (IOException full) {
            if (!String.valueOf(full.getMessage()).contains("No space left")) {
                throw full;
            }
        }
    }

    private static void sh(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(String.join(" ", command) + ": " + out).isZero();
    }
}
