package io.outrun.worker.testing;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * An owner's calls to a node's HTTP API, as the integration tests make them: JSON bodies, a
 * bearer token, answers as text. Failures to reach the node are unchecked (a test fails on them).
 */
public final class ApiCalls {

    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private final String base;
    private final String token;

    public ApiCalls(String base, String token) {
        this.base = base;
        this.token = token;
    }

    public static ApiCalls on(int port, String token) {
        return new ApiCalls("http://127.0.0.1:" + port, token);
    }

    public String base() {
        return base;
    }

    public HttpResponse<String> post(String path, String json) {
        return send(request(path).header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json)));
    }

    public HttpResponse<String> get(String path) {
        return send(request(path).GET());
    }

    /** The body of a GET. */
    public String read(String path) {
        return get(path).body();
    }

    public HttpResponse<String> delete(String path) {
        return send(request(path).DELETE());
    }

    /** A request with the token, for what the helpers do not cover (headers, streamed answers). */
    public HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create(base + path)).header("Authorization", "Bearer " + token)
                .timeout(Duration.ofSeconds(60));
    }

    public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> body) {
        try {
            return HTTP.send(request, body);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private HttpResponse<String> send(HttpRequest.Builder request) {
        return send(request.build(), HttpResponse.BodyHandlers.ofString());
    }
}
