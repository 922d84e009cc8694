package io.outrun.worker.node;

import io.outrun.api.auth.TokenStore;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
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
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One fleet shared by owners, across two real worker JVMs: an owner's running cap holds fleet-wide
 * while another owner's work starts at once behind its 2,000-deep backlog; a queued cap answers
 * 429; an admin token lists the nodes, an owner's token may not.
 */
class OwnerSharingIT {

    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @Test
    void aCapHoldsFleetWideWhileAnotherOwnersFirstExecutionStartsAtOnce() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        String[] dbArgs = {"--db-url", db.url(), "--db-user", db.user(), "--db-password", db.password()};
        assertThat(WorkerProcess.cli(concat(new String[] {"owner", "set", "alice", "--max-running", "2"}, dbArgs)))
                .contains("owner alice: max running 2");
        try (Core api = Core.open(db, "api", OwnerLimits.DEFAULTS);
             WorkerProcess a = WorkerProcess.start(db, "share-a", 2);
             WorkerProcess b = WorkerProcess.start(db, "share-b", 2)) {
            long t0 = System.nanoTime();
            for (int i = 0; i < 2000; i++) {
                api.service().submit(Submission.of("alice", "sleep 600"));
            }
            System.out.printf("SHARING: 2,000 submissions of one owner in %.1f s%n", (System.nanoTime() - t0) / 1e9);
            Await.until("alice runs her cap", Duration.ofSeconds(30), () -> count(api, "alice", "running") == 2);
            assertThat(count(api, "alice", "queued")).isEqualTo(1998);

            UUID first = api.service().submit(Submission.of("bob", "echo hello from bob")).execution().id();
            Execution done = Await.until("bob's first execution ran", Duration.ofSeconds(30),
                    () -> api.submissions().find(first).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
            Duration waited = Duration.between(done.createdAt(), done.startedAt());
            System.out.printf("SHARING: bob's first execution started %d ms after its submission, behind 1,998 of alice's%n",
                    waited.toMillis());
            // The figure is 2 s (57 ms and 761 ms measured here); the bound is looser so a
            // loaded CI machine cannot fail it, and still far below what waiting behind alice's
            // burst would take (her 1,998 queued runs of 10 minutes, two at a time).
            assertThat(waited).as("another owner's first execution starts at once").isLessThan(Duration.ofSeconds(10));

            // The cap held all along, on both nodes: never more than 2 of alice's running, for a while.
            long sampleUntil = System.nanoTime() + Duration.ofSeconds(3).toNanos();
            Await.until("3 s of samples of alice's running count", Duration.ofSeconds(30), () -> {
                assertThat(count(api, "alice", "running")).isLessThanOrEqualTo(2);
                return System.nanoTime() - sampleUntil >= 0;
            });
            // One of alice's runs ends: her next one takes its slot, and still no third.
            Execution running = api.submissions().find(oneRunning(api, "alice")).orElseThrow();
            api.service().cancel(running.id(), "alice");
            Await.until("alice's next one runs", Duration.ofSeconds(30), () -> count(api, "alice", "running") == 2
                    && count(api, "alice", "queued") == 1997);
            assertThat(count(api, "alice", "running")).isEqualTo(2);
            System.out.println("SHARING: " + a.nodeId() + ", " + b.nodeId() + " ran it");
            cancelAll(api);
        }
    }

    @Test
    void aQueuedCapAnswers429AndAnAdminTokenListsTheNodes() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        String[] dbArgs = {"--db-url", db.url(), "--db-user", db.user(), "--db-password", db.password()};
        WorkerProcess.cli(concat(new String[] {"owner", "set", "zed", "--max-queued", "3"}, dbArgs));
        try (Core core = Core.open(db, "api", OwnerLimits.DEFAULTS);
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "api");
             WorkerProcess a = WorkerProcess.start(db, "admin-a", 1)) {
            TokenStore tokens = new TokenStore(core.pool());
            String zed = tokens.create("zed").token();
            String admin = tokens.create("ops", true).token();
            String base = "http://127.0.0.1:" + api.port();
            for (int i = 0; i < 3; i++) {
                assertThat(post(base + "/v1/executions", zed, "{\"command\":\"sleep 600\"}", "k" + i).statusCode())
                        .isEqualTo(202);
            }
            HttpResponse<String> refused = post(base + "/v1/executions", zed, "{\"command\":\"sleep 600\"}", "k3");
            assertThat(refused.statusCode()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("10");
            assertThat(refused.body()).contains("\"code\":\"too_many_queued\"", "its cap is 3", "guidance");
            HttpResponse<String> replay = post(base + "/v1/executions", zed, "{\"command\":\"sleep 600\"}", "k1");
            assertThat(replay.statusCode()).as("a repeat of an accepted submission is not refused").isEqualTo(202);
            assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");

            HttpResponse<String> denied = get(base + "/v1/admin/nodes", zed);
            assertThat(denied.statusCode()).isEqualTo(403);
            assertThat(denied.body()).contains("admin_required");
            HttpResponse<String> nodes = get(base + "/v1/admin/nodes", admin);
            assertThat(nodes.statusCode()).isEqualTo(200);
            assertThat(nodes.body()).contains("\"nodeId\":\"admin-a\"", "\"slots\":1", "\"state\":\"up\"");
            cancelAll(core);
        }
    }

    private static HttpResponse<String> post(String url, String token, String body, String key) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(url)).header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/json").header("Idempotency-Key", key)
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> get(String url, String token) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(url)).header("Authorization", "Bearer " + token).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static long count(Core core, String owner, String status) {
        return Rows.on(core.pool()).single("SELECT count(*) FROM executions WHERE owner = ? AND status = ?", owner, status);
    }


    private static UUID oneRunning(Core core, String owner) {
        try (Connection c = core.pool().getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT id FROM executions WHERE owner = '" + owner + "' AND status = 'running' LIMIT 1")) {
            rs.next();
            return rs.getObject(1, UUID.class);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Ends the test's backlog fast: queued rows cancelled in one statement, runs by their owners' cancel. */
    private static void cancelAll(Core core) throws Exception {
        Rows.on(core.pool()).update("UPDATE executions SET status = 'cancelled', finished_at = now(), error_code = 'cancelled'"
                + " WHERE status = 'queued'");
        try (Connection c = core.pool().getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT id, owner FROM executions WHERE status = 'running'")) {
            while (rs.next()) {
                core.service().cancel(rs.getObject(1, UUID.class), rs.getString(2));
            }
        }
    }

    private static String[] concat(String[] a, String[] b) {
        String[] all = new String[a.length + b.length];
        System.arraycopy(a, 0, all, 0, a.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }
}
