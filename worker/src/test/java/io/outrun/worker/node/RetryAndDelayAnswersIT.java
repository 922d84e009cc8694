package io.outrun.worker.node;

import io.outrun.api.auth.TokenStore;
import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.core.owner.OwnerLimits;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 28, from a review against real parts (each of these failed before its fix): answers about
 * retries and delayed starts are true, an idempotent repeat after a retry is answered, and a
 * delayed start is not left to the fallback poll while a node is free.
 */
class RetryAndDelayAnswersIT {

    private final HttpClient http = HttpClient.newHttpClient();

    /** Finding: an identical idempotent replay after a retry answers 409 (max_attempts was raised by the retry). */
    @Test
    void anIdenticalReplayAfterARetryIsAnsweredNotRefused() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core core = Core.open(db, "api", OwnerLimits.DEFAULTS);
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "api");
             WorkerProcess w = WorkerProcess.start(db, "rv-idem", 2)) {
            String token = new TokenStore(core.pool()).create("alice").token();
            String base = "http://127.0.0.1:" + api.port();
            String body = "{\"command\": \"exit 3\", \"retry\": {\"maxRetries\": 1, \"backoffMs\": 0}}";
            HttpResponse<String> first = post(base, token, body, "rv-key-1");
            assertThat(first.statusCode()).isEqualTo(202);
            UUID id = UUID.fromString(field(first.body(), "executionId"));
            assertThat(get(base, token, "/v1/executions/" + id + "?waitMs=20000").body()).contains("\"status\":\"failed\"");
            HttpResponse<String> replay = post(base, token, body, "rv-key-1");
            assertThat(replay.statusCode()).as(replay.body()).isIn(200, 202);
        }
    }

    /**
     * Findings: while a retry waits its backoff the guidance says the worker was lost; a delayed
     * start's guidance says it starts at once; a cancel that lands as a failing attempt ends says
     * the worker was lost and drops the exit code.
     */
    @Test
    void answersAboutRetriesAndDelaysAreTrue() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        try (Core core = Core.open(db, "api", OwnerLimits.DEFAULTS);
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "api");
             WorkerProcess w = WorkerProcess.start(db, "rv-answers", 2)) {
            org.assertj.core.api.SoftAssertions soft = new org.assertj.core.api.SoftAssertions();
            String token = new TokenStore(core.pool()).create("alice").token();
            String base = "http://127.0.0.1:" + api.port();

            String delayed = post(base, token, "{\"command\": \"true\", \"delayMs\": 600000}", null).body();
            soft.assertThat(delayed).as("a delayed start's guidance").doesNotContain("at once when one is idle")
                    .contains("Queued until ");

            UUID r = UUID.fromString(field(post(base, token, "{\"command\": \"exit 3\", \"retry\": {\"maxRetries\": 2,"
                    + " \"backoffMs\": 60000}}", null).body(), "executionId"));
            String waiting = Await.until("the retry waiting", Duration.ofSeconds(20), () -> {
                String b = get(base, token, "/v1/executions/" + r).body();
                return b.contains("\"retries\":1") ? b : null;
            });
            soft.assertThat(waiting).as("guidance while a retry waits").doesNotContain("lost its worker")
                    .contains("Queued for retry 1 of 2: attempt 1 ended command_failed (exit code 3)");
            soft.assertThat(waiting).as("maxAttempts as submitted").contains("\"maxAttempts\":3");

            // The cancel request lands while the attempt ends by itself with a retriable failure (the
            // worker has not seen it yet: simulated by setting the row's request only).
            UUID c = UUID.fromString(field(post(base, token, "{\"command\": \"sleep 3; exit 4\", \"retry\": {\"maxRetries\": 2,"
                    + " \"backoffMs\": 100}}", null).body(), "executionId"));
            Await.until("running", Duration.ofSeconds(20), () -> rows.single(
                    "SELECT count(*) FROM executions WHERE id = ? AND status = 'running'", c) == 1 ? true : null);
            rows.update("UPDATE executions SET cancel_requested_at = now() WHERE id = ?", c);
            // The command failed by itself before the cancel reached it: it ends as it ended, not retried.
            String ended = get(base, token, "/v1/executions/" + c + "?waitMs=20000").body();
            assertThat(ended).contains("\"status\":\"failed\"", "\"retries\":0");
            soft.assertThat(ended).as("no worker was lost").doesNotContain("worker was lost");
            soft.assertThat(ended).as("the command's own exit code").contains("\"exitCode\":4");
            // Cancelled while a retry waits: it says the attempt that ran failed, not that nothing started.
            HttpResponse<String> cancelled = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/executions/" + r + "/cancel"))
                    .header("Authorization", "Bearer " + token).POST(HttpRequest.BodyPublishers.noBody()).build(),
                    HttpResponse.BodyHandlers.ofString());
            soft.assertThat(cancelled.body()).contains("\"status\":\"cancelled\"",
                    "while waiting to retry; attempt 1 ended command_failed (exit code 3)");
            soft.assertAll();
        }
    }

    /**
     * Finding: only the node woken at the submit (and nodes that claim meanwhile) learn a delayed
     * row's due time; if that node is full then, a free node finds it only at its fallback poll.
     * Y's wake goes to a random free node: over four rounds it lands on the node that knows X at
     * least once with probability 15/16.
     */
    @Test
    void aDelayedStartIsNotLeftToTheFallbackPollWhileANodeIsFree() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        try (Core core = Core.open(db, "api", OwnerLimits.DEFAULTS);
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "api");
             WorkerProcess a = WorkerProcess.startWith(db, "rv-a", 1, "process", "--poll-interval-s", "30");
             WorkerProcess b = WorkerProcess.startWith(db, "rv-b", 1, "process", "--poll-interval-s", "30")) {
            String token = new TokenStore(core.pool()).create("alice").token();
            String base = "http://127.0.0.1:" + api.port();
            Await.until("both nodes' heartbeats say they are free", Duration.ofSeconds(20), () -> rows.single(
                    "SELECT count(*) FROM nodes WHERE node_id IN ('rv-a', 'rv-b') AND running = 0") == 2);
            List<Long> lateMs = new ArrayList<>();
            for (int round = 0; round < 4; round++) {
                UUID x = UUID.fromString(field(post(base, token, "{\"command\": \"true\", \"delayMs\": 3000}", null).body(),
                        "executionId"));
                // Y's submit comes after X's: its wake-up is sent after X's by the same sending thread.
                UUID y = UUID.fromString(field(post(base, token, "{\"command\": \"sleep 12\"}", null).body(), "executionId"));
                get(base, token, "/v1/executions/" + x + "?waitMs=30000");
                get(base, token, "/v1/executions/" + y + "?waitMs=30000");
                long late = rows.single("SELECT (extract(epoch FROM started_at - starts_at) * 1000)::int8 FROM executions"
                        + " WHERE id = ?", x);
                lateMs.add(late);
                Await.until("both nodes' heartbeats say they are free", Duration.ofSeconds(20), () -> rows.single(
                        "SELECT count(*) FROM nodes WHERE node_id IN ('rv-a', 'rv-b') AND running = 0") == 2);
            }
            assertThat(lateMs).as("ms each delayed start began after its due time (one node was free)")
                    .allMatch(ms -> ms < 1500);
        }
    }

    private HttpResponse<String> post(String base, String token, String body, String key) throws Exception {
        HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(base + "/v1/executions")).header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/json").timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            r.header("Idempotency-Key", key);
        }
        return http.send(r.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String base, String token, String path) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("Authorization", "Bearer " + token)
                    .timeout(Duration.ofSeconds(60)).GET().build(), HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":\"([^\"]+)\"").matcher(json);
        assertThat(m.find()).as(json).isTrue();
        return m.group(1);
    }
}
