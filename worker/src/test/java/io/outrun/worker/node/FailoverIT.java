package io.outrun.worker.node;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.api.auth.TokenStore;
import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.testing.Await;
import io.outrun.testing.StandalonePostgres;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real failover (issue 43): a primary and its synchronous streaming standby, two PostgreSQL 15
 * servers of their own; an API and a worker on one multi-host URL. The primary dies (immediate
 * stop) and the standby is promoted, as Patroni would do. Meanwhile both nodes say not-ready,
 * naming the failover, and submits are refused with 503 and Retry-After; afterwards both are
 * ready again on the new primary, what was acknowledged before is there, the run in flight ends
 * once, and a submit is run at once: the worker LISTENs on the new primary (its fallback poll is
 * set to a minute, so only the NOTIFY can start it in time).
 */
class FailoverIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    /** What Patroni takes at least to notice a dead primary: the window in which no primary answers. */
    private static final long DETECTION_MS = 2_000;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void nodesFollowAPromotedStandbyAndSayNotReadyMeanwhile(@TempDir Path dir) throws Exception {
        try (StandalonePostgres primary = StandalonePostgres.primary(dir, "pg-a")) {
            primary.execute("CREATE DATABASE outrun");
            try (StandalonePostgres standby = StandalonePostgres.standbyOf(primary, dir, "pg-b", true)) {
                assertThat(primary.query("SELECT string_agg(sync_state, ',') FROM pg_stat_replication"))
                        .as("the standby streams synchronously").isEqualTo("sync");
                DatabaseConfig db = new DatabaseConfig("jdbc:postgresql://" + primary.hostPort() + "," + standby.hostPort()
                        + "/outrun", "postgres", "");
                assertThat(db.url()).endsWith("?targetServerType=primary&hostRecheckSeconds=1");
                run(db, primary, standby);
            }
        }
    }

    private void run(DatabaseConfig db, StandalonePostgres primary, StandalonePostgres standby) throws Exception {
        int metricsPort;
        try (ServerSocket s = new ServerSocket(0)) {
            metricsPort = s.getLocalPort();
        }
        WorkerConfig config = WorkerConfig.defaults("w-failover").withPollInterval(Duration.ofSeconds(60))
                .withMetricsPort(metricsPort);
        try (Core core = Core.open(db, "api");
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "api");
             WorkerNode worker = WorkerNode.start(core, config, new ProcessSandbox(), Limits.DEFAULTS)) {
            String token = new TokenStore(core.pool()).create("alice").token();
            String base = "http://127.0.0.1:" + api.port();
            String workerHealth = "http://127.0.0.1:" + metricsPort + "/health";
            Await.until("the worker ready", Duration.ofSeconds(20), () -> get(workerHealth, null).statusCode() == 200);
            assertThat(get(base + "/health", null).statusCode()).isEqualTo(200);

            // Before: a submit runs at once (the worker's wake, LISTENed on the primary).
            String before = accepted(submit(base, token, "echo before", null));
            assertThat(end(base, token, before, 15_000).path("status").asText()).isEqualTo("succeeded");
            String inFlight = accepted(submit(base, token, "echo begin; sleep 5; echo end", null));
            Await.until("the run in flight", Duration.ofSeconds(15),
                    () -> "running".equals(read(base, token, inFlight).path("status").asText()));

            long stop = System.nanoTime();
            primary.stopImmediately();
            List<String> refusals = new java.util.concurrent.CopyOnWriteArrayList<>();
            long[] submitted = new long[1];
            java.util.concurrent.CompletableFuture<String> retried = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                while (true) {
                    HttpResponse<String> r = submit(base, token, "echo after", "after-failover");
                    if (r.statusCode() == 202) {
                        submitted[0] = System.nanoTime();
                        return tree(r.body()).path("executionId").asText();
                    }
                    // Refused while no primary answers: 503 and Retry-After, never a 500.
                    assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
                    assertThat(r.headers().firstValue("Retry-After")).isPresent();
                    refusals.add(tree(r.body()).path("error").path("code").asText() + " at " + ms(stop) + " ms");
                    assertThat(ms(stop)).as("a submit accepted within 40 s of the primary's death").isLessThan(40_000);
                    sleep(100);
                }
            });
            JsonNode workerDown = Await.until("the worker not ready", Duration.ofSeconds(10), () -> {
                HttpResponse<String> r = get(workerHealth, null);
                return r.statusCode() == 503 ? tree(r.body()) : null;
            });
            long workerDownMs = ms(stop);
            assertThat(workerDown.path("status").asText()).isEqualTo("not_ready");
            assertThat(workerDown.path("database").asText()).as(workerDown.toString()).contains("no primary answers", "(failing over?)");

            JsonNode apiDown = Await.until("the API not ready", Duration.ofSeconds(10), () -> {
                HttpResponse<String> r = get(base + "/health", null);
                return r.statusCode() == 503 ? tree(r.body()) : null;
            });
            long apiDownMs = ms(stop);
            assertThat(apiDown.path("database").asText()).as(apiDown.toString())
                    .startsWith("no primary answers among " + primary.hostPort() + ", " + standby.hostPort())
                    .endsWith("(failing over?)");
            assertThat(apiDown.path("error").path("code").asText()).isEqualTo("database_unavailable");
            Thread.sleep(Math.max(0, DETECTION_MS - ms(stop)));
            long promote = System.nanoTime();
            standby.promote();
            long promoted = ms(promote);

            // The client, meanwhile, retried its submit with one Idempotency-Key, as a 503's guidance says.
            String after = retried.get(40, TimeUnit.SECONDS);
            long submitOkMs = ms(stop) - ms(submitted[0]);
            Await.until("the API ready again", Duration.ofSeconds(20), () -> get(base + "/health", null).statusCode() == 200);
            long apiUpMs = ms(stop);
            Await.until("the worker ready again", Duration.ofSeconds(20), () -> get(workerHealth, null).statusCode() == 200);
            long workerUpMs = ms(stop);

            // What was acknowledged before the failover is on the new primary; the run in flight ends once.
            assertThat(read(base, token, before).path("status").asText()).isEqualTo("succeeded");
            JsonNode flown = end(base, token, inFlight, 40_000);
            assertThat(flown.path("status").asText()).as(flown.toString()).isEqualTo("succeeded");
            assertThat(flown.path("stdout").path("text").asText()).isEqualTo("begin\nend\n");
            // Submitted while the worker's listener was away: its reconnect's catch-up starts it, not the 60 s poll.
            assertThat(end(base, token, after, 20_000).path("status").asText()).isEqualTo("succeeded");
            // LISTENing on the new primary: a new submit's NOTIFY starts it at once.
            long listenSent = System.nanoTime();
            String listened = accepted(submit(base, token, "echo listened", null));
            assertThat(end(base, token, listened, 20_000).path("status").asText()).isEqualTo("succeeded");
            long listenedMs = ms(listenSent);
            assertThat(standby.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'outrun-w-failover'"))
                    .as("the worker's direct connection is on the new primary").isEqualTo("1");

            System.out.printf("FAILOVER: primary stopped at 0 ms; API not ready at %d ms, worker at %d ms (\"%s\");"
                            + " promoted at %d ms (pg_ctl promote took %d ms); submit accepted at %d ms after refusals %s;"
                            + " API ready at %d ms, worker at %d ms; run in flight ended %s on attempt %d;"
                            + " a submit on the new primary ended in %d ms%n",
                    apiDownMs, workerDownMs, apiDown.path("database").asText(), ms(stop) - ms(promote), promoted,
                    submitOkMs, refusals, apiUpMs, workerUpMs,
                    flown.path("status").asText(), flown.path("attempt").asInt(), listenedMs);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private HttpResponse<String> submit(String base, String token, String command, String key) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + "/v1/executions")).timeout(Duration.ofSeconds(20))
                .header("Authorization", "Bearer " + token).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"command\":\"" + command + "\"}"));
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        try {
            return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private HttpResponse<String> get(String url, String token) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).GET();
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        try {
            return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private JsonNode read(String base, String token, String id) {
        HttpResponse<String> r = get(base + "/v1/executions/" + id, token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return tree(r.body());
    }

    private static JsonNode tree(String body) {
        try {
            return JSON.readTree(body);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The execution once ended, waiting up to {@code waitMs} (long polls of at most 10 s). */
    private JsonNode end(String base, String token, String id, long waitMs) throws Exception {
        long deadline = System.nanoTime() + waitMs * 1_000_000;
        while (true) {
            HttpResponse<String> r = get(base + "/v1/executions/" + id + "?waitMs=" + Math.min(10_000, waitMs), token);
            JsonNode e = r.statusCode() == 200 ? JSON.readTree(r.body()) : null;
            if (e != null && !List.of("queued", "running").contains(e.path("status").asText())) {
                return e;
            }
            assertThat(System.nanoTime() - deadline).as("execution " + id + " ended within " + waitMs + " ms: " + r.body())
                    .isNegative();
        }
    }

    private static String accepted(HttpResponse<String> r) throws Exception {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(202);
        return JSON.readTree(r.body()).path("executionId").asText();
    }

    private static long ms(long sinceNanos) {
        return (System.nanoTime() - sinceNanos) / 1_000_000;
    }
}
