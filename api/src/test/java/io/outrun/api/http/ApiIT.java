package io.outrun.api.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.outrun.client.ApiException;
import io.outrun.client.OutrunClient;
import io.outrun.client.wire.ExecutionPage;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.Json;
import io.outrun.client.wire.OutputChunk;
import io.outrun.client.wire.SubmitRequest;
import io.outrun.testing.Await;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The API over real HTTP on a real PostgreSQL, without workers: everything that does not need a
 * command to run (auth, validation, errors, isolation, idempotency, listing, cancel of queued
 * executions, long polls woken by a cancel). WorkerApiIT in the worker module covers the rest.
 */
class ApiIT {

    private static ApiHarness api;

    @BeforeAll
    static void start() {
        api = ApiHarness.start();
    }

    @AfterAll
    static void stop() {
        api.close();
    }

    private static JsonNode json(HttpResponse<String> r) {
        try {
            return Json.mapper().readTree(r.body());
        } catch (Exception e) {
            throw new AssertionError("not JSON: " + r.body(), e);
        }
    }

    private static void assertError(HttpResponse<String> r, int status, String code, String messagePart) {
        JsonNode body = json(r);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("application/json"));
        assertThat(body.path("status").asText()).isEqualTo("error");
        assertThat(body.path("error").path("code").asText()).isEqualTo(code);
        assertThat(body.path("error").path("message").asText()).contains(messagePart);
        assertThat(body.path("guidance").asText()).isNotBlank();
        assertThat(r.body()).doesNotContain("Exception").doesNotContain("\tat ");
    }

    @Test
    void metricsShowTheFleetWithoutAToken() {
        // ApiIT runs no worker: what is submitted stays queued.
        api.alice().submit(SubmitRequest.of("echo counted"));
        HttpResponse<String> r = api.send("GET", "/metrics", null, null);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body())
                .containsPattern("outrun_executions\\{status=\"queued\"\\} [1-9]")
                .contains("outrun_executions{status=\"running\"}")
                .contains("outrun_leases_expired")
                .contains("outrun_queue_oldest_seconds")
                .contains("outrun_executions_ended_5m{status=\"failed\"}");
    }

    @Test
    void healthNeedsNoToken() {
        HttpResponse<String> r = api.send("GET", "/health", null, null);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(json(r).path("status").asText()).isEqualTo("ok");
    }

    @Test
    void openApiDocumentsExactlyTheServedRoutes() {
        HttpResponse<String> r = api.send("GET", "/openapi.json", null, null);
        assertThat(r.statusCode()).isEqualTo(200);
        Set<Route> documented = new HashSet<>();
        for (Iterator<Map.Entry<String, JsonNode>> paths = json(r).path("paths").fields(); paths.hasNext(); ) {
            Map.Entry<String, JsonNode> path = paths.next();
            path.getValue().fieldNames().forEachRemaining(m -> documented.add(new Route(m.toUpperCase(), path.getKey())));
        }
        assertThat(documented).containsExactlyInAnyOrderElementsOf(ApiServer.ROUTES);
        // And each documented route is really served: never answered as an unknown route or method.
        for (Route route : documented) {
            String path = route.path().replace("{id}", UUID.randomUUID().toString()).replace("{name}", "x");
            HttpResponse<String> answer = api.send(route.method(), path, api.aliceToken,
                    route.method().equals("POST") ? "{}" : null);
            if (answer.headers().firstValue("Content-Type").orElse("").startsWith("text/plain")) {
                assertThat(answer.statusCode()).as(route.toString()).isEqualTo(200); // /metrics
                continue;
            }
            assertThat(json(answer).path("error").path("code").asText(""))
                    .as(route + " -> " + answer.body())
                    .isNotIn("route_not_found", "method_not_allowed");
        }
    }

    @Test
    void rejectsMissingMalformedUnknownAndRevokedTokens() throws Exception {
        assertError(api.send("GET", "/v1/executions", null, null), 401, "identity_required", "Authorization");
        assertError(api.send("GET", "/v1/executions", "not-a-token", null), 401, "identity_required", "token");
        var issued = api.tokens().create("carol");
        assertThat(api.send("GET", "/v1/executions", issued.token(), null).statusCode()).isEqualTo(200);
        assertThat(api.tokens().revoke(issued.token())).isTrue();
        Await.until("revocation to take effect (within a few seconds)", Duration.ofSeconds(5),
                () -> api.send("GET", "/v1/executions", issued.token(), null).statusCode() == 401);
    }

    @Test
    void submitAnswersAtOnceWithIdGuidanceAndClampedLimits() {
        ExecutionView v = api.alice().submit(SubmitRequest.of("echo hi").withTimeoutMs(999_999_999L)
                .withLabels(Map.of("task", "t1")).withEnv(Map.of("LANG", "C.UTF-8")));
        assertThat(v.status()).isEqualTo("queued");
        assertThat(UUID.fromString(v.executionId())).isNotNull();
        assertThat(v.timeoutMs()).isEqualTo(3_600_000L);
        assertThat(v.maxOutputBytes()).isEqualTo(1 << 20);
        assertThat(v.labels()).containsEntry("task", "t1");
        assertThat(v.guidance()).contains("Do not wait idle").contains("/v1/executions/" + v.executionId());
        HttpResponse<String> raw = api.send("POST", "/v1/executions", api.aliceToken, "{\"command\":\"true\"}");
        assertThat(raw.statusCode()).isEqualTo(202);
        assertThat(raw.headers().firstValue("Location")).hasValueSatisfying(l -> assertThat(l).startsWith("/v1/executions/"));
    }

    @Test
    void invalidSubmissionsNameTheField() {
        String t = api.aliceToken;
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"echo"), 400, "invalid_request", "body");
        assertError(api.send("POST", "/v1/executions", t, "[1,2]"), 400, "invalid_request", "body");
        assertError(api.send("POST", "/v1/executions", t, ""), 400, "invalid_request", "body");
        assertError(api.send("POST", "/v1/executions", t, "{}"), 400, "invalid_request", "command");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"  \"}"), 400, "invalid_request", "command");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": 42}"), 400, "invalid_request", "command");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"a\\u0000b\"}"), 400, "invalid_request", "command");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"timeoutMs\": \"10\"}"), 400, "invalid_request", "timeoutMs");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"timeoutMs\": -5}"), 400, "invalid_request", "timeoutMs");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"timeoutMs\": 1.5}"), 400, "invalid_request", "timeoutMs");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"maxOutputBytes\": 0}"), 400, "invalid_request", "maxOutputBytes");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"waitMs\": -1}"), 400, "invalid_request", "waitMs");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"bogus\": 1}"), 400, "invalid_request", "bogus");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"env\": {\"LD_PRELOAD\": \"/x.so\"}}"), 400, "invalid_request", "env.LD_PRELOAD");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"env\": {\"LANG\": 1}}"), 400, "invalid_request", "env.LANG");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"env\": [\"A\"]}"), 400, "invalid_request", "env");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"workdir\": \"rel\"}"), 400, "invalid_request", "workdir");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"image\": \"bad image\"}"), 400, "invalid_request", "image");
        StringBuilder labels = new StringBuilder("{");
        for (int i = 0; i < 17; i++) {
            labels.append(i == 0 ? "" : ",").append("\"k").append(i).append("\":\"v\"");
        }
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"labels\": " + labels + "}}"), 400, "invalid_request", "labels");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"command\": \"y\"}"), 400, "invalid_request", "body");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\"} trailing"), 400, "invalid_request", "body");
        // Unpaired surrogates are not text: refused, never stored altered.
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"echo \\ud800 x\"}"), 400, "invalid_request", "command");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"labels\": {\"a\": \"\\udc00\"}}"), 400, "invalid_request", "labels.a");
        assertThat(api.send("POST", "/v1/executions", t, "{\"command\": \"echo \\ud83d\\ude00\"}").statusCode())
                .as("a proper pair is fine").isEqualTo(202);
        // Beyond 64 bits is still "too large": clamped like any value over the maximum.
        HttpResponse<String> huge = api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"timeoutMs\": 99999999999999999999999}");
        assertThat(huge.statusCode()).isEqualTo(202);
        assertThat(api.alice().get(json(huge).path("executionId").asText()).timeoutMs()).isEqualTo(3_600_000L);
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"timeoutMs\": -99999999999999999999999}"), 400, "invalid_request", "timeoutMs");
        assertThatThrownBy(() -> api.alice().submit(SubmitRequest.of("")))
                .isInstanceOf(ApiException.InvalidRequest.class)
                .hasMessageContaining("command");
    }

    @Test
    void maxAttemptsPerSubmissionIsCheckedAndClampedToTheOperatorsMaximum() {
        assertThat(api.alice().submit(SubmitRequest.of("true").withMaxAttempts(1)).maxAttempts()).isEqualTo(1);
        assertThat(api.alice().submit(SubmitRequest.of("true").withMaxAttempts(99)).maxAttempts()).as("clamped").isEqualTo(3);
        assertThat(api.alice().submit(SubmitRequest.of("true")).maxAttempts()).as("the server's default").isEqualTo(3);
        String t = api.aliceToken;
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"maxAttempts\": 0}"), 400, "invalid_request", "maxAttempts");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"maxAttempts\": \"1\"}"), 400, "invalid_request", "maxAttempts");
        assertError(api.send("POST", "/v1/executions", t, "{\"command\": \"x\", \"waitFor\": \"start\"}"), 400, "invalid_request", "waitFor");
        // The same key with another maxAttempts is another request.
        String key = "attempts-" + UUID.randomUUID();
        api.alice().submit(SubmitRequest.of("echo not twice").withMaxAttempts(1), key);
        assertThatThrownBy(() -> api.alice().submit(SubmitRequest.of("echo not twice").withMaxAttempts(2), key))
                .isInstanceOf(ApiException.class).hasMessageContaining("Idempotency-Key");
    }

    @Test
    void resourcesAskedAreClampedAndShownInEveryAnswer() {
        HttpResponse<String> r = api.send("POST", "/v1/executions", api.aliceToken,
                "{\"command\": \"true\", \"memoryMb\": 999999, \"cpus\": 0.25, \"tmpfsMb\": 64}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(202);
        JsonNode resources = json(r).path("resources");
        assertThat(resources.path("memoryMb").asInt()).isEqualTo(ApiConfig.DEFAULT_MAX_MEMORY_MB);
        assertThat(resources.path("cpus").asDouble()).isEqualTo(0.25);
        assertThat(resources.has("pids")).as("not asked: the node's default, not shown").isFalse();
        assertThat(resources.path("tmpfsMb").asInt()).isEqualTo(64);
        String id = json(r).path("executionId").asText();
        assertThat(json(api.send("GET", "/v1/executions/" + id, api.aliceToken, null)).path("resources")).isEqualTo(resources);
        // Asked for nothing: no resources field at all.
        assertThat(json(api.send("POST", "/v1/executions", api.aliceToken, "{\"command\": \"true\"}")).has("resources")).isFalse();
        // The same key with other resources is another request.
        String key = "res-" + java.util.UUID.randomUUID();
        assertThat(api.alice().submit(SubmitRequest.of("true").withResources(128, null, null, null), key).resources().memoryMb())
                .isEqualTo(128);
        assertThatThrownBy(() -> api.alice().submit(SubmitRequest.of("true").withResources(256, null, null, null), key))
                .isInstanceOf(ApiException.class).hasMessageContaining("Idempotency-Key");
    }

    @Test
    void anImageOffTheAllowlistIsRefusedAtSubmit() {
        assertError(api.send("POST", "/v1/executions", api.aliceToken, "{\"command\": \"x\", \"image\": \"debian:12\"}"),
                400, "image_not_allowed", "debian:12");
        assertThat(api.send("POST", "/v1/executions", api.aliceToken,
                "{\"command\": \"x\", \"image\": \"outrun-sandbox:latest\"}").statusCode()).isEqualTo(202);
        try (ApiHarness open = ApiHarness.start(ApiConfig.defaults("127.0.0.1", 0).withImageAllowlist(List.of("allowed/*")))) {
            assertThat(open.send("POST", "/v1/executions", open.aliceToken,
                    "{\"command\": \"x\", \"image\": \"allowed/tool:1\"}").statusCode()).isEqualTo(202);
            assertError(open.send("POST", "/v1/executions", open.aliceToken,
                    "{\"command\": \"x\", \"image\": \"other:1\"}"), 400, "image_not_allowed", "allowed/*");
        }
    }

    @Test
    void pollsAreLightByDefaultAndCarryTheOutputCursor() {
        String script = "# " + "x".repeat(300_000) + "\necho 1";
        String id = api.alice().submit(SubmitRequest.of(script)).executionId();
        HttpResponse<String> light = api.send("GET", "/v1/executions/" + id, api.aliceToken, null);
        JsonNode body = json(light);
        assertThat(light.body().length()).as("no 300 KB command in a poll").isLessThan(3_000);
        assertThat(body.path("command").asText()).hasSize(201).endsWith("…");
        assertThat(body.path("cursor").asText()).isNotEmpty();
        assertThat(body.path("stdout").path("totalBytes").asLong()).isZero();
        HttpResponse<String> full = api.send("GET", "/v1/executions/" + id + "?output=full", api.aliceToken, null);
        assertThat(json(full).path("command").asText()).isEqualTo(script);
        HttpResponse<String> none = api.send("GET", "/v1/executions/" + id + "?output=none", api.aliceToken, null);
        assertThat(json(none).path("stdout").has("text")).isFalse();
        assertError(api.send("GET", "/v1/executions/" + id + "?output=all", api.aliceToken, null), 400, "invalid_request", "output");
        // The cursor of a poll reads on at /output: nothing new yet, and the same cursor back.
        OutputChunk next = api.alice().output(id, body.path("cursor").asText(), 0);
        assertThat(next.stdout().text()).isEmpty();
        api.alice().cancel(id);
    }

    @Test
    void bodyOverTheLimitIs413() {
        String big = "{\"command\": \"" + "x".repeat(3 << 20) + "\"}";
        assertError(api.send("POST", "/v1/executions", api.aliceToken, big), 413, "request_too_large", "limit");
        // A command just under the limit is fine: long commands never pass through an argv.
        String large = "{\"command\": \"# " + "x".repeat(1 << 20) + "\"}";
        assertThat(api.send("POST", "/v1/executions", api.aliceToken, large).statusCode()).isEqualTo(202);
    }

    @Test
    void anotherOwnersExecutionAnswersExactlyLikeAMissingOne() {
        String id = api.alice().submit(SubmitRequest.of("sleep 100")).executionId();
        String missing = UUID.randomUUID().toString();
        for (String[] call : new String[][] {{"GET", "/v1/executions/%s"}, {"GET", "/v1/executions/%s/output"},
                {"POST", "/v1/executions/%s/cancel"}}) {
            HttpResponse<String> foreign = api.send(call[0], call[1].formatted(id), api.bobToken, null);
            HttpResponse<String> absent = api.send(call[0], call[1].formatted(missing), api.bobToken, null);
            assertError(foreign, 404, "execution_not_found", id);
            assertThat(foreign.body().replace(id, "ID")).isEqualTo(absent.body().replace(missing, "ID"));
        }
        assertError(api.send("GET", "/v1/executions/not-a-uuid", api.bobToken, null), 404, "execution_not_found", "not-a-uuid");
        assertThat(api.bob().list(null, 100, null).executions()).extracting(s -> s.executionId()).doesNotContain(id);
        assertThat(api.alice().get(id).status()).isEqualTo("queued");
    }

    @Test
    void idempotencyKeyReturnsTheFirstExecution() {
        String key = "key-" + UUID.randomUUID();
        ExecutionView first = api.alice().submit(SubmitRequest.of("echo once"), key);
        ExecutionView again = api.alice().submit(SubmitRequest.of("echo once"), key);
        assertThat(again.executionId()).isEqualTo(first.executionId());
        ExecutionView bobs = api.bob().submit(SubmitRequest.of("echo once"), key);
        assertThat(bobs.executionId()).isNotEqualTo(first.executionId());
        assertThatThrownBy(() -> api.alice().submit(SubmitRequest.of("echo different"), key))
                .isInstanceOfSatisfying(ApiException.class, e -> {
                    assertThat(e.httpStatus()).isEqualTo(409);
                    assertThat(e.code()).isEqualTo("idempotency_key_reused");
                });
        SubmitRequest longer = SubmitRequest.of("echo once").withTimeoutMs(99_000L);
        assertThatThrownBy(() -> api.alice().submit(longer, key)).as("same command, other limits")
                .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.code()).isEqualTo("idempotency_key_reused"));
        assertThat(api.alice().list(null, 100, null).executions()).filteredOn(s -> s.command().equals("echo once")).hasSize(1);
        assertError(sendWithKey("bad key with spaces"), 400, "invalid_request", "Idempotency-Key");
    }

    private HttpResponse<String> sendWithKey(String key) {
        try {
            var request = java.net.http.HttpRequest.newBuilder(api.base().resolve("/v1/executions"))
                    .header("Authorization", "Bearer " + api.aliceToken).header("Idempotency-Key", key)
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"command\":\"true\"}")).build();
            return java.net.http.HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void cancelsAQueuedExecutionAndWakesItsLongPoll() throws Exception {
        OutrunClient alice = api.alice();
        String id = alice.submit(SubmitRequest.of("sleep 100")).executionId();
        long start = System.nanoTime();
        CompletableFuture<OutputChunk> poll = CompletableFuture.supplyAsync(() -> alice.output(id, null, 20_000));
        CompletableFuture<ExecutionView> wait = CompletableFuture.supplyAsync(() -> alice.get(id, 20_000));
        // Cancel only once both requests are held: the point is that the cancel wakes them.
        Await.until("both long polls waiting", Duration.ofSeconds(10), () -> api.longPollsWaiting() == 2);
        ExecutionView cancelled = alice.cancel(id);
        assertThat(cancelled.status()).isEqualTo("cancelled");
        assertThat(cancelled.error().code()).isEqualTo("cancelled");
        OutputChunk chunk = poll.get(10, TimeUnit.SECONDS);
        assertThat(chunk.done()).isTrue();
        assertThat(wait.get(10, TimeUnit.SECONDS).status()).isEqualTo("cancelled");
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("woken, not timed out").isLessThan(5_000);
        // A second cancel is harmless.
        assertThat(alice.cancel(id).status()).isEqualTo("cancelled");
    }

    @Test
    void longPollWaitsWhenNothingChanges() {
        String id = api.alice().submit(SubmitRequest.of("sleep 100")).executionId();
        long start = System.nanoTime();
        OutputChunk chunk = api.alice().output(id, null, 1500);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(tookMs).isBetween(1400L, 5000L);
        assertThat(chunk.done()).isFalse();
        assertThat(chunk.stdout().text()).isEmpty();
        assertThat(chunk.guidance()).contains("cursor=" + chunk.cursor());
        assertError(api.send("GET", "/v1/executions/" + id + "/output?cursor=garbage!", api.aliceToken, null), 400, "invalid_request", "cursor");
        assertError(api.send("GET", "/v1/executions/" + id + "/output?waitMs=soon", api.aliceToken, null), 400, "invalid_request", "waitMs");
    }

    @Test
    void listsOwnExecutionsNewestFirstInPages() {
        var harness = ApiHarness.start();
        try {
            OutrunClient dave = harness.client(harness.tokens().create("dave").token());
            List<String> submitted = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                submitted.add(0, dave.submit(SubmitRequest.of("echo " + i)).executionId());
            }
            List<String> seen = new ArrayList<>();
            String after = null;
            do {
                ExecutionPage page = dave.list(null, 2, after);
                assertThat(page.executions()).hasSizeLessThanOrEqualTo(2);
                page.executions().forEach(s -> seen.add(s.executionId()));
                after = page.next();
            } while (after != null);
            assertThat(seen).containsExactlyElementsOf(submitted);
            dave.cancel(submitted.get(0));
            assertThat(dave.list("cancelled", 10, null).executions()).extracting(s -> s.executionId())
                    .containsExactly(submitted.get(0));
            assertThat(dave.list("queued", 10, null).executions()).hasSize(4);
        } finally {
            harness.close();
        }
        assertError(api.send("GET", "/v1/executions?status=done", api.aliceToken, null), 400, "invalid_request", "status");
        assertError(api.send("GET", "/v1/executions?limit=0", api.aliceToken, null), 400, "invalid_request", "limit");
        assertError(api.send("GET", "/v1/executions?after=xyz", api.aliceToken, null), 400, "invalid_request", "after");
        String farFuture = java.util.Base64.getUrlEncoder().encodeToString(
                ("l1|+300000-01-01T00:00:00Z|" + new UUID(0, 0)).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        assertError(api.send("GET", "/v1/executions?after=" + farFuture, api.aliceToken, null), 400, "invalid_request", "after");
        HttpResponse<String> overflow = api.send("GET", "/v1/executions?limit=4294967297", api.aliceToken, null);
        assertThat(overflow.statusCode()).as("a huge limit is clamped, not wrapped").isEqualTo(200);
        assertThat(api.send("GET", "/v1/executions?limit=2147483648", api.aliceToken, null).statusCode()).isEqualTo(200);
    }

    @Test
    void unknownRoutesAndMethodsAnswerInTheErrorShape() {
        assertError(api.send("GET", "/v2/nothing", api.aliceToken, null), 404, "route_not_found", "/v2/nothing");
        assertError(api.send("GET", "/nothing", null, null), 404, "route_not_found", "/nothing");
        assertError(api.send("DELETE", "/v1/executions", api.aliceToken, null), 405, "method_not_allowed", "DELETE");
        assertError(api.send("PUT", "/health", null, null), 405, "method_not_allowed", "PUT");
    }

    @Test
    void requestsJettyRefusesBeforeRoutingStillAnswerInTheErrorShape() throws Exception {
        assertRawError("GET /v1/executions/%ZZ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400, "invalid_request");
        assertRawError("GET /v1/" + "x".repeat(20_000) + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 414, "request_too_large");
        assertRawError("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + "y".repeat(20_000) + "\r\nConnection: close\r\n\r\n",
                431, "request_too_large");
    }

    private static void assertRawError(String request, int status, String code) throws Exception {
        try (java.net.Socket socket = new java.net.Socket(api.base().getHost(), api.base().getPort())) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(request.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
            String answer = new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            assertThat(answer).as(answer).startsWith("HTTP/1.1 " + status).containsIgnoringCase("content-type: application/json");
            JsonNode body = Json.mapper().readTree(answer.substring(answer.indexOf("\r\n\r\n") + 4));
            assertThat(body.path("error").path("code").asText()).isEqualTo(code);
            assertThat(body.path("guidance").asText()).isNotBlank();
        }
    }
}
