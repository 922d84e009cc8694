package io.outrun.worker.node;

import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.api.auth.TokenStore;
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
import java.time.Instant;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jobrunr.jobs.states.StateName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 28: a submission with {@code delayMs} or {@code startAt} is stored at once, queued with
 * {@code startsAt}, SCHEDULED on the dashboard, and starts no sooner than asked and no later than
 * a claim after (a node that learned when it is due looks then, not at its next poll). Against a
 * real worker JVM; the times are the database's.
 */
class DelayedStartIT {

    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void aDelayedExecutionStartsWhenAskedAndNotBefore() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        try (Core core = Core.open(db, "api", OwnerLimits.DEFAULTS);
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "api");
             // A 30 s fallback poll: only the due time itself can start the run within the bound below.
             WorkerProcess w = WorkerProcess.startWith(db, "delay-1", 2, "process", "--poll-interval-s", "30")) {
            String token = new TokenStore(core.pool()).create("alice").token();
            String base = "http://127.0.0.1:" + api.port();

            HttpResponse<String> delayed = post(base, token, "{\"command\": \"echo later\", \"delayMs\": 4000}");
            assertThat(delayed.statusCode()).as(delayed.body()).isEqualTo(202);
            assertThat(delayed.body()).contains("\"status\":\"queued\"", "\"startsAt\":\"");
            UUID id = UUID.fromString(field(delayed.body(), "executionId"));
            UUID jobId = core.submissions().find(id).orElseThrow().jobId();
            // Its book is written off the submit's path, within a moment.
            Await.until("its book written", Duration.ofSeconds(3), () -> {
                try {
                    return core.storage().getJobById(jobId) != null;
                } catch (org.jobrunr.storage.JobNotFoundException notYet) {
                    return false;
                }
            });
            assertThat(core.storage().getJobById(jobId).getState())
                    .as("SCHEDULED on the dashboard until it is due").isEqualTo(StateName.SCHEDULED);

            HttpResponse<String> done = get(base, token, "/v1/executions/" + id + "?waitMs=15000");
            assertThat(done.body()).contains("\"status\":\"succeeded\"", "later\\n", "\"startsAt\":\"");
            long waitedMs = rows.single("SELECT (extract(epoch FROM started_at - created_at) * 1000)::int8 FROM executions"
                    + " WHERE id = ?", id);
            assertThat(waitedMs).as("started no sooner than asked").isGreaterThanOrEqualTo(4000);
            assertThat(waitedMs).as("started at its due time, not at a later poll").isLessThan(6500);

            // startAt: an instant; one in the past starts at once.
            HttpResponse<String> past = post(base, token, "{\"command\": \"echo now\", \"startAt\": \""
                    + Instant.now().minusSeconds(60) + "\", \"waitMs\": 10000}");
            assertThat(past.body()).contains("\"status\":\"succeeded\"");
            HttpResponse<String> atSoon = post(base, token, "{\"command\": \"echo at\", \"startAt\": \""
                    + Instant.now().plusSeconds(2) + "\"}");
            assertThat(atSoon.statusCode()).isEqualTo(202);
            UUID at = UUID.fromString(field(atSoon.body(), "executionId"));
            assertThat(get(base, token, "/v1/executions/" + at + "?waitMs=15000").body()).contains("\"status\":\"succeeded\"");
            assertThat(rows.single("SELECT count(*) FROM executions WHERE id = ? AND started_at >= starts_at", at)).isEqualTo(1);

            // Bad input: each a 400 naming the field.
            assertThat(post(base, token, "{\"command\": \"true\", \"delayMs\": 1000, \"startAt\": \"2026-12-24T18:00:00Z\"}")
                    .body()).contains("invalid_request", "startAt");
            assertThat(post(base, token, "{\"command\": \"true\", \"delayMs\": 2592000001}").body())
                    .contains("invalid_request", "delayMs", "30 days");
            assertThat(post(base, token, "{\"command\": \"true\", \"delayMs\": -1}").body()).contains("invalid_request", "delayMs");
            assertThat(post(base, token, "{\"command\": \"true\", \"startAt\": \"tomorrow\"}").body())
                    .contains("invalid_request", "ISO-8601");
        }
    }

    private HttpResponse<String> post(String base, String token, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + "/v1/executions")).header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String base, String token, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("Authorization", "Bearer " + token)
                .timeout(Duration.ofSeconds(60)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":\"([^\"]+)\"").matcher(json);
        assertThat(m.find()).as(json).isTrue();
        return m.group(1);
    }
}
