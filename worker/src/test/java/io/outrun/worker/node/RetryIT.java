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
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 28: a command that fails is run again as its submission's retry policy says: a new attempt
 * after the backoff (doubled each time), until it passes or the retries are spent; codes not in
 * {@code on} are not retried. Against a real worker JVM; the command reads its attempt.
 */
class RetryIT {

    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void aFailingCommandIsRetriedWithBackoffUntilItPasses() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        try (Core core = Core.open(db, "api", OwnerLimits.DEFAULTS);
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "api");
             WorkerProcess w = WorkerProcess.start(db, "retry-1", 2)) {
            String token = new TokenStore(core.pool()).create("alice").token();
            String base = "http://127.0.0.1:" + api.port();
            String flaky = "[ \\\"$OUTRUN_ATTEMPT\\\" = 3 ] && echo ok-$OUTRUN_ATTEMPT || { echo fail-$OUTRUN_ATTEMPT; exit 3; }";

            HttpResponse<String> submitted = post(base, token, "{\"command\": \"" + flaky + "\","
                    + " \"retry\": {\"maxRetries\": 2, \"backoffMs\": 1000}}");
            assertThat(submitted.statusCode()).as(submitted.body()).isEqualTo(202);
            assertThat(submitted.body()).contains("\"retry\":{\"maxRetries\":2,\"backoffMs\":1000,\"on\":[\"command_failed\"],\"retries\":0");
            UUID id = UUID.fromString(field(submitted.body(), "executionId"));
            // While the first retry waits its backoff: queued, with the failure and when it starts.
            String waiting = Await.until("the first retry waiting", Duration.ofSeconds(20), () -> {
                String body = get(base, token, "/v1/executions/" + id).body();
                return body.contains("\"retries\":1") && body.contains("\"status\":\"queued\"") ? body : null;
            });
            assertThat(waiting).contains("\"lastFailure\":\"attempt 1 ended command_failed (exit code 3)\"", "\"nextAt\":\"",
                    "fail-1");

            String done = get(base, token, "/v1/executions/" + id + "?waitMs=20000").body();
            assertThat(done).contains("\"status\":\"succeeded\"", "\"attempt\":3", "\"retries\":2",
                    "attempt 2 ended command_failed (exit code 3)", "\"stdout\":{\"text\":\"ok-3\\n\"");
            // Backoff respected: 1 s, then 2 s, between the three attempts.
            assertThat(rows.single("SELECT (extract(epoch FROM started_at - created_at) * 1000)::int8 FROM executions"
                    + " WHERE id = ?", id)).isGreaterThanOrEqualTo(3000);

            // Spent: it ends failed at its last retry.
            String spent = post(base, token, "{\"command\": \"echo x; exit 4\", \"retry\": {\"maxRetries\": 1,"
                    + " \"backoffMs\": 0}, \"waitMs\": 20000}").body();
            assertThat(spent).contains("\"status\":\"failed\"", "\"attempt\":2", "\"retries\":1", "\"exitCode\":4");
            // Not in `on`: not retried.
            String notOn = post(base, token, "{\"command\": \"exit 5\", \"retry\": {\"maxRetries\": 3, \"on\": [\"timed_out\"]},"
                    + " \"waitMs\": 20000}").body();
            assertThat(notOn).contains("\"status\":\"failed\"", "\"attempt\":1", "\"retries\":0");

            assertThat(post(base, token, "{\"command\": \"true\", \"retry\": {\"maxRetries\": 1, \"on\": [\"sandbox_error\"]}}")
                    .body()).contains("invalid_request", "retry.on[0]");
            assertThat(post(base, token, "{\"command\": \"true\", \"retry\": {\"max\": 1}}").body())
                    .contains("invalid_request", "retry.max");
            assertThat(post(base, token, "{\"command\": \"true\", \"retry\": {\"backoffMs\": 10}}").body())
                    .contains("invalid_request", "retry.maxRetries");
        }
    }

    private HttpResponse<String> post(String base, String token, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + "/v1/executions")).header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/json").timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
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
