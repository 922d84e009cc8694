package io.outrun.api.http;

import io.outrun.api.auth.TokenStore;
import io.outrun.client.OutrunClient;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.TestDatabase;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * A real API node for tests: a fresh migrated database, a {@link Core} and an {@link ApiNode}
 * on a free port, plus tokens of two owners. Workers, when a test needs them, start on
 * {@link #core()}.
 */
public final class ApiHarness implements AutoCloseable {

    private final Core core;
    private final ApiNode api;
    private final TokenStore tokens;
    private final HttpClient http = HttpClient.newHttpClient();
    public final String aliceToken;
    public final String bobToken;

    private ApiHarness(ApiConfig config) {
        this(TestDatabase.migrated(DatabaseConfig::new), config);
    }

    private ApiHarness(DatabaseConfig db, ApiConfig config) {
        this.core = Core.open(db, "api-test");
        this.api = ApiNode.start(core, config, "test");
        this.tokens = new TokenStore(core.pool());
        this.aliceToken = tokens.create("alice").token();
        this.bobToken = tokens.create("bob").token();
    }

    public static ApiHarness start() {
        return new ApiHarness(ApiConfig.defaults("127.0.0.1", 0));
    }

    public static ApiHarness start(ApiConfig config) {
        return new ApiHarness(config);
    }

    /** A node on a database the test made itself (already migrated). */
    public static ApiHarness start(DatabaseConfig db) {
        return new ApiHarness(db, ApiConfig.defaults("127.0.0.1", 0));
    }

    public Core core() {
        return core;
    }

    public TokenStore tokens() {
        return tokens;
    }

    /** Long polls this node holds now. */
    public int longPollsWaiting() {
        return api.server().longPollsWaiting();
    }

    public URI base() {
        return URI.create("http://127.0.0.1:" + api.port());
    }

    public OutrunClient client(String token) {
        return new OutrunClient(base(), token);
    }

    public OutrunClient alice() {
        return client(aliceToken);
    }

    public OutrunClient bob() {
        return client(bobToken);
    }

    /** A raw request, for what the typed client cannot send (bad JSON, unknown routes). */
    public HttpResponse<String> send(String method, String path, String token, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(base().resolve(path)).timeout(Duration.ofSeconds(60))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        try {
            return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new AssertionError("request failed: " + method + " " + path, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Override
    public void close() {
        try {
            api.close();
        } finally {
            core.close();
        }
    }
}
