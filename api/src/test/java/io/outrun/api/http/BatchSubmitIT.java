package io.outrun.api.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.outrun.client.ApiException;
import io.outrun.client.wire.BatchResponse;
import io.outrun.client.wire.BatchResult;
import io.outrun.client.wire.BatchSubmission;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.Json;
import io.outrun.client.wire.SubmitRequest;
import io.outrun.testing.Await;
import io.outrun.testing.Rows;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /v1/executions/batch} and the group commit of single submits, over real HTTP on a
 * real PostgreSQL (no worker: rows stay queued). A bad item fails only itself; all good ones are
 * stored in one transaction (one xmin); idempotency holds inside a batch, against earlier rows
 * and under concurrency; every 202 names a row already committed.
 */
class BatchSubmitIT {

    private static ApiHarness api;
    private static Rows rows;

    @BeforeAll
    static void start() {
        api = ApiHarness.start();
        rows = Rows.on(api.core().pool());
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

    private static long distinctXmin(List<String> ids) {
        return rows.single("SELECT count(DISTINCT xmin::text) FROM executions WHERE id::text = ANY(?)",
                (Object) ids.toArray(new String[0]));
    }

    @Test
    void badItemsFailAloneAndTheGoodOnesShareOneTransaction() throws Exception {
        String key = "mixed-" + UUID.randomUUID();
        HttpResponse<String> r = api.send("POST", "/v1/executions/batch", api.aliceToken, """
                {"submissions": [
                  {"command": "echo one"},
                  {"timeoutMs": 5},
                  {"command": "echo three", "idempotencyKey": "%s", "labels": {"n": "3"}},
                  {"command": "echo four", "waitMs": 1000},
                  "not an object",
                  {"command": "echo six", "bogus": 1},
                  {"command": "echo seven", "idempotencyKey": "has space"},
                  {"command": "echo eight", "env": {"SECRET_THING": "x"}},
                  {"command": "echo nine", "delayMs": 60000}
                ]}""".formatted(key));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode body = json(r);
        assertThat(body.path("accepted").asInt()).isEqualTo(3);
        assertThat(body.path("refused").asInt()).isEqualTo(6);
        assertThat(body.path("guidance").asText()).contains("6 of 9");
        JsonNode results = body.path("results");
        assertThat(results).hasSize(9);
        for (int i = 0; i < 9; i++) {
            assertThat(results.get(i).path("index").asInt()).isEqualTo(i);
        }
        int[] statuses = new int[9];
        for (int i = 0; i < 9; i++) {
            statuses[i] = results.get(i).path("status").asInt();
        }
        assertThat(statuses).containsExactly(202, 400, 202, 400, 400, 400, 400, 400, 202);
        // Each refusal is the single submit's error body, guidance and all.
        assertThat(results.get(1).path("error").path("error").path("code").asText()).isEqualTo("invalid_request");
        assertThat(results.get(1).path("error").path("error").path("message").asText()).startsWith("command:");
        assertThat(results.get(3).path("error").path("error").path("code").asText()).isEqualTo("wait_not_in_batch");
        assertThat(results.get(4).path("error").path("error").path("message").asText()).contains("must be a JSON object");
        assertThat(results.get(5).path("error").path("error").path("message").asText()).contains("bogus: is not a field");
        assertThat(results.get(6).path("error").path("error").path("message").asText()).startsWith("idempotencyKey:");
        assertThat(results.get(7).path("error").path("error").path("message").asText()).contains("env.SECRET_THING");
        for (int i : new int[] {1, 3, 4, 5, 6, 7}) {
            assertThat(results.get(i).path("error").path("status").asText()).isEqualTo("error");
            assertThat(results.get(i).path("error").path("guidance").asText()).isNotBlank();
            assertThat(results.get(i).has("execution")).isFalse();
        }
        // Each acceptance is the single submit's 202 body.
        List<String> ids = new ArrayList<>();
        for (int i : new int[] {0, 2, 8}) {
            JsonNode e = results.get(i).path("execution");
            assertThat(e.path("status").asText()).isEqualTo("queued");
            assertThat(e.path("guidance").asText()).isNotBlank();
            assertThat(results.get(i).path("replayed").asBoolean(true)).isFalse();
            ids.add(e.path("executionId").asText());
        }
        assertThat(results.get(2).path("execution").path("labels").path("n").asText()).isEqualTo("3");
        assertThat(results.get(8).path("execution").path("startsAt").asText()).isNotEmpty();
        assertThat(rows.single("SELECT count(*) FROM executions WHERE id::text = ANY(?)", (Object) ids.toArray(new String[0])))
                .isEqualTo(3);
        assertThat(rows.single("SELECT count(*) FROM executions WHERE idempotency_key = ?", key)).isEqualTo(1);
        // All the good ones in ONE transaction.
        assertThat(distinctXmin(ids)).isEqualTo(1);
        // Each is booked as a single submit's is (its JobRunr job; written off the answer's path, soon).
        Await.until("the batch's jobs", Duration.ofSeconds(10), () -> rows.single("SELECT count(*) FROM jobrunr_jobs j"
                + " JOIN executions e ON e.job_id::text = j.id WHERE e.id::text = ANY(?)",
                (Object) ids.toArray(new String[0])) == 3);
    }

    @Test
    void idempotencyKeysHoldInsideTheBatchAndAgainstEarlierRows() {
        String earlier = "earlier-" + UUID.randomUUID();
        String twice = "twice-" + UUID.randomUUID();
        ExecutionView first = api.alice().submit(SubmitRequest.of("echo earlier"), earlier);
        BatchResponse answer = api.alice().submitBatch(List.of(
                BatchSubmission.of(SubmitRequest.of("echo earlier"), earlier),
                BatchSubmission.of(SubmitRequest.of("echo twice"), twice),
                BatchSubmission.of(SubmitRequest.of("echo twice"), twice),
                BatchSubmission.of(SubmitRequest.of("echo different"), earlier),
                BatchSubmission.of(SubmitRequest.of("echo no key"))));
        List<BatchResult> r = answer.results();
        assertThat(r.get(0).ok()).isTrue();
        assertThat(r.get(0).replayed()).isTrue();
        assertThat(r.get(0).execution().executionId()).isEqualTo(first.executionId());
        assertThat(r.get(1).replayed()).isFalse();
        assertThat(r.get(2).replayed()).isTrue();
        assertThat(r.get(2).execution().executionId()).isEqualTo(r.get(1).execution().executionId());
        // A repeat of a key with a different request: the single submit's 409.
        assertThat(r.get(3).status()).isEqualTo(409);
        assertThat(r.get(3).error().error().code()).isEqualTo("idempotency_key_reused");
        assertThat(r.get(4).status()).isEqualTo(202);
        assertThat(answer.accepted()).isEqualTo(4);
        assertThat(answer.refused()).isEqualTo(1);
        assertThat(rows.single("SELECT count(*) FROM executions WHERE idempotency_key = ?", twice)).isEqualTo(1);

        // The whole batch again (a client's retry after a lost answer): nothing new.
        long before = rows.single("SELECT count(*) FROM executions WHERE owner = 'alice'");
        BatchResponse again = api.alice().submitBatch(List.of(
                BatchSubmission.of(SubmitRequest.of("echo earlier"), earlier),
                BatchSubmission.of(SubmitRequest.of("echo twice"), twice)));
        assertThat(again.results()).allSatisfy(x -> assertThat(x.replayed()).isTrue());
        assertThat(again.results().get(1).execution().executionId()).isEqualTo(r.get(1).execution().executionId());
        assertThat(rows.single("SELECT count(*) FROM executions WHERE owner = 'alice'")).isEqualTo(before);
    }

    @Test
    void anOwnerOverItsQueuedCapMidBatchGetsA429ForEachItemBeyondIt() throws Exception {
        String owner = "capped-" + UUID.randomUUID().toString().substring(0, 8);
        String token = api.tokens().create(owner).token();
        api.core().owners().set(owner, null, 3);
        List<BatchSubmission> five = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            five.add(BatchSubmission.of(SubmitRequest.of("echo " + i)));
        }
        BatchResponse answer = api.client(token).submitBatch(five);
        assertThat(answer.results()).extracting(BatchResult::status).containsExactly(202, 202, 202, 429, 429);
        assertThat(answer.results().get(3).error().error().code()).isEqualTo("too_many_queued");
        assertThat(answer.results().get(4).error().guidance()).contains("Retry-After");
        assertThat(rows.single("SELECT count(*) FROM executions WHERE owner = ?", owner)).isEqualTo(3);
    }

    @Test
    void wholeRequestErrorsStoreNothing() {
        long before = rows.single("SELECT count(*) FROM executions");
        StringBuilder big = new StringBuilder("{\"submissions\": [");
        for (int i = 0; i < 1001; i++) {
            big.append(i == 0 ? "" : ",").append("{\"command\": \"true\"}");
        }
        HttpResponse<String> tooMany = api.send("POST", "/v1/executions/batch", api.aliceToken, big.append("]}").toString());
        assertThat(tooMany.statusCode()).isEqualTo(413);
        assertThat(json(tooMany).path("error").path("code").asText()).isEqualTo("batch_too_large");
        assertThat(json(tooMany).path("error").path("message").asText()).contains("1001 submissions");
        for (String bad : List.of("{\"submissions\": []}", "{}", "[]", "{\"submissions\": {}}", "not json",
                "{\"submissions\": [], \"extra\": 1}", "{\"submissions\": [{\"command\": \"true\"}]} trailing")) {
            HttpResponse<String> r = api.send("POST", "/v1/executions/batch", api.aliceToken, bad);
            assertThat(r.statusCode()).as(bad + " -> " + r.body()).isEqualTo(400);
            assertThat(json(r).path("error").path("code").asText()).isEqualTo("batch_invalid");
            assertThat(json(r).path("guidance").asText()).contains("submissions");
        }
        assertThat(api.send("POST", "/v1/executions/batch", null, "{\"submissions\": [{\"command\": \"true\"}]}")
                .statusCode()).isEqualTo(401);
        assertThatThrownBy(() -> api.alice().submitBatch(List.of())).isInstanceOf(ApiException.class)
                .satisfies(e -> assertThat(((ApiException) e).code()).isEqualTo("batch_invalid"));
        assertThat(rows.single("SELECT count(*) FROM executions")).isEqualTo(before);
    }

    @Test
    void aBodyOverTheBatchLimitAnswers413() {
        try (ApiHarness small = ApiHarness.start(ApiConfig.defaults("127.0.0.1", 0).withMaxBatchBodyBytes(4096))) {
            String body = "{\"submissions\": [{\"command\": \"" + "x".repeat(5000) + "\"}]}";
            HttpResponse<String> r = small.send("POST", "/v1/executions/batch", small.aliceToken, body);
            assertThat(r.statusCode()).isEqualTo(413);
            assertThat(json(r).path("error").path("code").asText()).isEqualTo("batch_too_large");
            assertThat(json(r).path("error").path("message").asText()).contains("4096");
        }
    }

    @Test
    void concurrentSingleSubmitsAreStoredOnceEachAndAnsweredOnlyOnceCommitted() throws Exception {
        int threads = 16;
        int each = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        String label = UUID.randomUUID().toString();
        try {
            List<Future<List<String>>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                futures.add(pool.submit(() -> {
                    go.await();
                    List<String> mine = new ArrayList<>();
                    for (int i = 0; i < each; i++) {
                        ExecutionView v = api.alice().submit(SubmitRequest.builder().command("true")
                                .labels(java.util.Map.of("run", label)).build());
                        // Answered 202 only once durable: the row is there for any other connection.
                        assertThat(rows.single("SELECT count(*) FROM executions WHERE id = ?::uuid", v.executionId()))
                                .isEqualTo(1);
                        mine.add(v.executionId());
                    }
                    return mine;
                }));
            }
            go.countDown();
            Set<String> ids = new HashSet<>();
            for (Future<List<String>> f : futures) {
                ids.addAll(f.get(120, TimeUnit.SECONDS));
            }
            assertThat(ids).hasSize(threads * each);
            assertThat(rows.single("SELECT count(*) FROM executions WHERE labels->>'run' = ?", label))
                    .isEqualTo(threads * each);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void anIdempotentRepeatUnderConcurrencyAnswersTheSameExecution() throws Exception {
        String key = "race-" + UUID.randomUUID();
        List<CompletableFuture<ExecutionView>> all = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(16);
        CountDownLatch go = new CountDownLatch(1);
        try {
            for (int t = 0; t < 16; t++) {
                all.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                    return api.alice().submit(SubmitRequest.of("echo race"), key);
                }, pool));
            }
            go.countDown();
            Set<String> ids = new HashSet<>();
            for (CompletableFuture<ExecutionView> f : all) {
                ids.add(f.get(60, TimeUnit.SECONDS).executionId());
            }
            assertThat(ids).hasSize(1);
            assertThat(rows.single("SELECT count(*) FROM executions WHERE idempotency_key = ?", key)).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
    }
}
