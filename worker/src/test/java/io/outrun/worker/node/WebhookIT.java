package io.outrun.worker.node;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.outrun.api.auth.TokenStore;
import io.outrun.model.egress.EgressPolicy;
import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.core.owner.OwnerLimits;
import io.outrun.core.secrets.SecretsKey;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.ApiCalls;
import io.outrun.worker.testing.WorkerProcess;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 28: completion webhooks, against real worker JVMs and local receivers. Each end is POSTed
 * with Standard Webhooks headers whose signature verifies with the owner's secret; a receiver
 * that answers 500 once gets the same {@code webhook-id} again; one that is down for a minute
 * still gets it; a node SIGKILLed mid-delivery leaves it to another node; refused destinations
 * and owners without a secret answer 400 at submit.
 */
class WebhookIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** A local receiver: records each request; {@code answer} says what to reply to the n-th (1-based). */
    static final class Receiver implements AutoCloseable {
        record Hit(String id, String timestamp, String signature, String body) {
        }

        final List<Hit> hits = new CopyOnWriteArrayList<>();
        final HttpServer server;
        final AtomicInteger count = new AtomicInteger();

        Receiver(int port, java.util.function.IntUnaryOperator answer) throws Exception {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 16);
            server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
            server.createContext("/", ex -> {
                int n = count.incrementAndGet();
                String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
                hits.add(new Hit(ex.getRequestHeaders().getFirst("webhook-id"), ex.getRequestHeaders().getFirst(
                        "webhook-timestamp"), ex.getRequestHeaders().getFirst("webhook-signature"), body));
                int status = answer.applyAsInt(n);
                ex.sendResponseHeaders(status, -1);
                ex.close();
            });
            server.start();
        }

        int port() {
            return server.getAddress().getPort();
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }

    @Test
    void endsArePostedSignedRetriedAndNeverLost(@TempDir Path dir) throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        String keyText = SecretsKey.generate();
        Path keyFile = Files.writeString(dir.resolve("secrets-key"), keyText);
        int downPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            downPort = s.getLocalPort(); // nothing listens there until a minute after the end
        }
        CountDownLatch firstHeld = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (Receiver failOnce = new Receiver(0, n -> n == 1 ? 500 : 204);
             Receiver holdFirst = new Receiver(0, n -> {
                 if (n == 1) {
                     firstHeld.countDown();
                     try {
                         release.await(60, TimeUnit.SECONDS);
                     } catch (InterruptedException e) {
                         Thread.currentThread().interrupt();
                     }
                 }
                 return 200;
             })) {
            List<String> allow = List.of("127.0.0.1:" + failOnce.port(), "127.0.0.1:" + holdFirst.port(),
                    "127.0.0.1:" + downPort);
            String allowArg = String.join(",", allow);
            try (Core core = Core.open(db, "api", OwnerLimits.DEFAULTS);
                 ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0)
                         .withSecretsKey(SecretsKey.fromBase64(keyText, "test"))
                         .withWebhooks(EgressPolicy.parse(allow, InetAddress::getAllByName, EgressPolicy.WEBHOOK_FLAG)), "api")) {
                TokenStore tokens = new TokenStore(core.pool());
                String alice = tokens.create("alice").token();
                String bob = tokens.create("bob").token();
                ApiCalls a = ApiCalls.on(api.port(), alice);
                ApiCalls asBob = ApiCalls.on(api.port(), bob);

                // Refused at submit: no secret yet, then destinations off the list or inside the fleet.
                String hook = "http://127.0.0.1:" + failOnce.port() + "/hooks/outrun?x=1";
                HttpResponse<String> noSecret = a.post("/v1/executions",
                        "{\"command\": \"true\", \"webhook\": \"" + hook + "\"}");
                assertThat(noSecret.statusCode()).isEqualTo(400);
                assertThat(noSecret.body()).contains("webhook_secret_missing", "POST /v1/webhook-secret");
                HttpResponse<String> made = a.post("/v1/webhook-secret", "");
                assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
                String secret = JSON.readTree(made.body()).get("secret").asText();
                assertThat(secret).startsWith("whsec_");
                for (String refused : List.of("http://127.0.0.2:" + failOnce.port() + "/", "http://localhost:"
                        + failOnce.port() + "/", "http://127.0.0.1:9/", "https://example.invalid/")) {
                    HttpResponse<String> r = a.post("/v1/executions",
                            "{\"command\": \"true\", \"webhook\": \"" + refused + "\"}");
                    assertThat(r.statusCode()).as(refused + " " + r.body()).isEqualTo(400);
                    assertThat(r.body()).as(refused).contains("webhook_not_allowed", "--webhook-allow");
                }
                for (String bad : List.of("ftp://127.0.0.1/", "http://user:pw@127.0.0.1:" + failOnce.port() + "/", "nope")) {
                    HttpResponse<String> r = a.post("/v1/executions",
                            "{\"command\": \"true\", \"webhook\": \"" + bad + "\"}");
                    assertThat(r.statusCode()).as(bad).isEqualTo(400);
                    assertThat(r.body()).as(bad).contains("invalid_request", "webhook");
                }
                assertThat(asBob.post("/v1/executions", "{\"command\": \"true\", \"webhook\": \"" + hook + "\"}").body())
                        .contains("webhook_secret_missing");

                try (WorkerProcess w1 = WorkerProcess.startWith(db, "hook-1", 2, "process", "--webhook-allow", allowArg,
                        "--secrets-key-file", keyFile.toString())) {
                    // 1. A receiver that answers 500 once gets the same event again, signed.
                    String failOnceId = id(a.post("/v1/executions", "{\"command\": \"echo hi; exit 3\","
                            + " \"labels\": {\"job\": \"nightly\"}, \"webhook\": \"" + hook + "\"}"));
                    // 2. A receiver down for a minute after the end.
                    String downId = id(a.post("/v1/executions", "{\"command\": \"true\", \"webhook\":"
                            + " \"http://127.0.0.1:" + downPort + "/\"}"));
                    String failed = Await.until("the fail-once webhook delivered", Duration.ofSeconds(40), () -> {
                        String b = a.read("/v1/executions/" + failOnceId);
                        return b.contains("\"state\":\"delivered\"") ? b : null;
                    });
                    JsonNode hookView = JSON.readTree(failed).get("webhook");
                    assertThat(hookView.get("attempts").asInt()).isEqualTo(2);
                    assertThat(hookView.get("lastStatus").asInt()).isEqualTo(204);
                    assertThat(failOnce.hits).hasSize(2);
                    assertThat(failOnce.hits.get(0).id()).isEqualTo(failOnce.hits.get(1).id())
                            .isEqualTo(hookView.get("eventId").asText());
                    assertThat(failOnce.hits.get(0).body()).isEqualTo(failOnce.hits.get(1).body());
                    for (Receiver.Hit h : failOnce.hits) {
                        assertThat(h.signature()).isEqualTo(sign(secret, h.id(), h.timestamp(), h.body()));
                        assertThat(Long.parseLong(h.timestamp())).isCloseTo(System.currentTimeMillis() / 1000,
                                org.assertj.core.data.Offset.offset(120L));
                    }
                    JsonNode event = JSON.readTree(failOnce.hits.get(1).body());
                    assertThat(event.get("type").asText()).isEqualTo("execution.finished");
                    assertThat(event.at("/data/executionId").asText()).isEqualTo(failOnceId);
                    assertThat(event.at("/data/status").asText()).isEqualTo("failed");
                    assertThat(event.at("/data/exitCode").asInt()).isEqualTo(3);
                    assertThat(event.at("/data/error/code").asText()).isEqualTo("command_failed");
                    assertThat(event.at("/data/attempt").asInt()).isEqualTo(1);
                    assertThat(event.at("/data/labels/job").asText()).isEqualTo("nightly");
                    assertThat(event.at("/data/durationMs").isNumber()).isTrue();
                    // The retry waited its backoff (5 s; the timestamps are whole seconds).
                    assertThat(Long.parseLong(failOnce.hits.get(1).timestamp()) - Long.parseLong(failOnce.hits.get(0).timestamp()))
                            .isGreaterThanOrEqualTo(4);

                    // 3. The node is SIGKILLed while its attempt waits on the receiver: another node sends it.
                    String heldId = id(a.post("/v1/executions", "{\"command\": \"echo held\", \"webhook\":"
                            + " \"http://127.0.0.1:" + holdFirst.port() + "/\"}"));
                    assertThat(firstHeld.await(30, TimeUnit.SECONDS)).isTrue();
                    w1.kill();
                    release.countDown();
                    try (WorkerProcess w2 = WorkerProcess.startWith(db, "hook-2", 2, "process", "--webhook-allow", allowArg,
                            "--secrets-key-file", keyFile.toString())) {
                        String held = Await.until("the held webhook delivered by the other node", Duration.ofSeconds(100), () -> {
                            String b = a.read("/v1/executions/" + heldId);
                            return b.contains("\"state\":\"delivered\"") ? b : null;
                        });
                        assertThat(JSON.readTree(held).at("/webhook/attempts").asInt()).isEqualTo(2);
                        assertThat(holdFirst.hits).hasSize(2);
                        assertThat(holdFirst.hits.get(0).id()).isEqualTo(holdFirst.hits.get(1).id());

                        // 2, continued: the receiver comes up a minute after the end and still gets it.
                        String pending = a.read("/v1/executions/" + downId);
                        JsonNode downView = JSON.readTree(pending).get("webhook");
                        assertThat(downView.get("state").asText()).as(pending).isEqualTo("pending");
                        assertThat(downView.get("lastError").asText()).contains("no answer");
                        java.time.Instant ended = java.time.Instant.parse(JSON.readTree(pending).get("finishedAt").asText());
                        // The outage itself: the receiver stays down for the minute after the end.
                        Await.until("a minute after the end", Duration.ofSeconds(90),
                                () -> java.time.Instant.now().isAfter(ended.plusSeconds(60)));
                        try (Receiver late = new Receiver(downPort, n -> 200)) {
                            String got = Await.until("the webhook of the receiver that was down", Duration.ofSeconds(90),
                                    () -> {
                                        String b = a.read("/v1/executions/" + downId);
                                        return b.contains("\"state\":\"delivered\"") ? b : null;
                                    });
                            assertThat(late.hits).hasSize(1);
                            assertThat(late.hits.get(0).id()).isEqualTo(JSON.readTree(got).at("/webhook/eventId").asText());
                            assertThat(JSON.readTree(got).at("/webhook/attempts").asInt()).isGreaterThanOrEqualTo(4);
                        }

                        // A rotated secret signs from now on; the previous one signs beside it (space-separated
                        // Standard Webhooks signatures) for the delivery window, so receivers can move over.
                        HttpResponse<String> rotated = a.post("/v1/webhook-secret", "");
                        assertThat(rotated.statusCode()).isEqualTo(200);
                        String newSecret = JSON.readTree(rotated.body()).get("secret").asText();
                        assertThat(newSecret).isNotEqualTo(secret);
                        String afterId = id(a.post("/v1/executions", "{\"command\": \"true\", \"webhook\": \""
                                + hook + "\"}"));
                        Await.until("the webhook after the rotation", Duration.ofSeconds(30), () ->
                                a.read("/v1/executions/" + afterId).contains("\"state\":\"delivered\"") ? true : null);
                        Receiver.Hit last = failOnce.hits.get(failOnce.hits.size() - 1);
                        assertThat(last.body()).contains(afterId);
                        assertThat(last.signature().split(" ")).containsExactly(
                                sign(newSecret, last.id(), last.timestamp(), last.body()),
                                sign(secret, last.id(), last.timestamp(), last.body()));
                    }
                }
            }
        }
    }

    static String sign(String secret, String id, String timestamp, String body) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(Base64.getDecoder().decode(secret.substring("whsec_".length())), "HmacSHA256"));
        return "v1," + Base64.getEncoder().encodeToString(mac.doFinal((id + "." + timestamp + "." + body)
                .getBytes(StandardCharsets.UTF_8)));
    }

    private String id(HttpResponse<String> r) throws Exception {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(202);
        JsonNode n = JSON.readTree(r.body());
        assertThat(n.at("/webhook/state").asText()).isEqualTo("waiting");
        return n.get("executionId").asText();
    }
}
