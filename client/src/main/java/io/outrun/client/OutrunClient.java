package io.outrun.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.client.wire.ArtifactList;
import io.outrun.client.wire.BatchRequest;
import io.outrun.client.wire.BatchResponse;
import io.outrun.client.wire.BatchSubmission;
import io.outrun.client.wire.ExecutionPage;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.Json;
import io.outrun.client.wire.OutputChunk;
import io.outrun.client.wire.ProgressView;
import io.outrun.client.wire.Schedule;
import io.outrun.client.wire.SecretList;
import io.outrun.client.wire.StdinWritten;
import io.outrun.client.wire.SubmitRequest;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.StringJoiner;

/**
 * A client of Outrun's HTTP API on {@code java.net.http}. Thread-safe; one instance per API and
 * token. Every failure is an {@link OutrunException}: an {@link ApiException} with the server's
 * code, message and guidance, or an {@link UnreachableException}.
 */
public final class OutrunClient {

    /** Slack on top of a long poll's wait before the client gives up on an answer. */
    private static final Duration SLACK = Duration.ofSeconds(30);

    private final URI base;
    private final String token;
    private final HttpClient http;
    private final ObjectMapper json = Json.mapper();
    /** Who reads the API's guidance ({@code Outrun-Channel}: mcp, cli), or null for plain HTTP. */
    private final String channel;

    public OutrunClient(URI base, String token) {
        this(base, token, HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build());
    }

    public OutrunClient(URI base, String token, HttpClient http) {
        this(base, token, http, null);
    }

    private OutrunClient(URI base, String token, HttpClient http, String channel) {
        String s = Objects.requireNonNull(base, "base").toString();
        this.base = URI.create(s.endsWith("/") ? s.substring(0, s.length() - 1) : s);
        this.token = token;
        this.http = http;
        this.channel = channel;
    }

    /**
     * A client for use inside a run (issue 31): the API at {@code $OUTRUN_API} with the run's token
     * {@code $OUTRUN_API_TOKEN}. It acts as the run's owner within the run's scope: submit, read,
     * wait for and cancel its children, read its own execution ({@code $OUTRUN_EXECUTION_ID}) and
     * report its {@link #progress}.
     *
     * @throws IllegalStateException when not inside a run (either variable is unset)
     */
    public static OutrunClient fromRunEnv() {
        return fromRunEnv(System.getenv());
    }

    /** As {@link #fromRunEnv()}, reading the variables from {@code env}. */
    public static OutrunClient fromRunEnv(Map<String, String> env) {
        String api = env.get("OUTRUN_API");
        String token = env.get("OUTRUN_API_TOKEN");
        if (api == null || api.isBlank() || token == null || token.isBlank()) {
            throw new IllegalStateException("not inside an Outrun run: OUTRUN_API and OUTRUN_API_TOKEN are set only in"
                    + " the environment of a run whose node can sign run tokens");
        }
        return new OutrunClient(URI.create(api.strip()), token.strip());
    }

    /**
     * The same client, asking the API to word its guidance for {@code channel}: {@code mcp}
     * (tools and their arguments), {@code cli} (commands), or null (HTTP routes).
     */
    public OutrunClient withChannel(String channel) {
        return new OutrunClient(base, token, http, channel);
    }

    public URI base() {
        return base;
    }

    /** Submits a command; {@code idempotencyKey} may be null. The answer shows output as {@code ?output=tail}. */
    public ExecutionView submit(SubmitRequest request, String idempotencyKey) {
        return submit(request, idempotencyKey, null);
    }

    /**
     * Submits a command; {@code idempotencyKey} may be null; {@code output} is how much output the
     * answer shows: {@code none}, {@code tail} or {@code full} (null: the server's default, tail).
     */
    public ExecutionView submit(SubmitRequest request, String idempotencyKey, String output) {
        HttpRequest.Builder b = request("/v1/executions" + query("output", output), waitOf(request.waitMs()))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(encode(request)));
        if (idempotencyKey != null) {
            b.header("Idempotency-Key", idempotencyKey);
        }
        return send(b.build(), ExecutionView.class);
    }

    public ExecutionView submit(SubmitRequest request) {
        return submit(request, null);
    }

    /**
     * Submits up to 1,000 commands in one request, stored in one transaction
     * ({@code POST /v1/executions/batch}); each {@link BatchSubmission} carries its own optional
     * idempotency key, as {@link #submit(SubmitRequest, String)} takes one. A bad submission fails
     * only itself: the answer has one {@link io.outrun.client.wire.BatchResult} per submission, in
     * order, each with its execution or its error. Throws only when the request as a whole is
     * refused (empty or over 1,000 submissions, too large, authentication, database unavailable).
     */
    public BatchResponse submitBatch(List<BatchSubmission> submissions) {
        return submitBatch(submissions, null);
    }

    /** As {@link #submitBatch(List)}; {@code output} is how much output each answer shows: none, tail or full (null: tail). */
    public BatchResponse submitBatch(List<BatchSubmission> submissions, String output) {
        HttpRequest r = request("/v1/executions/batch" + query("output", output), Duration.ZERO)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(encode(new BatchRequest(submissions)))).build();
        return send(r, BatchResponse.class);
    }

    public ExecutionView get(String executionId) {
        return get(executionId, 0);
    }

    /** With {@code waitMs} &gt; 0, answers as soon as the execution ends, or at the end of the wait. */
    public ExecutionView get(String executionId, long waitMs) {
        return get(executionId, waitMs, null);
    }

    /** As {@link #get(String, long)}, with {@code output} {@code none}, {@code tail} or {@code full} (null: tail). */
    public ExecutionView get(String executionId, long waitMs, String output) {
        String path = "/v1/executions/" + encodePath(executionId)
                + query("waitMs", waitMs > 0 ? String.valueOf(waitMs) : null, "output", output);
        return send(request(path, waitOf(waitMs)).GET().build(), ExecutionView.class);
    }

    /** Output after {@code cursor} (null: from the start), waiting up to {@code waitMs} for some. */
    public OutputChunk output(String executionId, String cursor, long waitMs) {
        return output(executionId, cursor, waitMs, 0);
    }

    /**
     * Output after {@code cursor}, at most {@code maxBytes} bytes of each stream (0: all of it);
     * when {@link OutputChunk#more()} is true, ask again with its cursor for the next page.
     */
    public OutputChunk output(String executionId, String cursor, long waitMs, long maxBytes) {
        String path = "/v1/executions/" + encodePath(executionId) + "/output"
                + query("cursor", cursor, "waitMs", waitMs > 0 ? String.valueOf(waitMs) : null,
                        "maxBytes", maxBytes > 0 ? String.valueOf(maxBytes) : null);
        return send(request(path, waitOf(waitMs)).GET().build(), OutputChunk.class);
    }

    /**
     * Appends {@code text} (UTF-8) to the stdin of an execution submitted with stdin open;
     * {@code eof} closes it after. The answer's cursor reads what the command printed since.
     */
    public StdinWritten writeStdin(String executionId, String text, boolean eof) {
        Map<String, Object> body = new LinkedHashMap<>();
        if (text != null && !text.isEmpty()) {
            body.put("text", text);
        }
        if (eof) {
            body.put("eof", true);
        }
        return stdin(executionId, body);
    }

    /** As {@link #writeStdin(String, String, boolean)}, for any bytes (sent base64). */
    public StdinWritten writeStdin(String executionId, byte[] data, boolean eof) {
        Map<String, Object> body = new LinkedHashMap<>();
        if (data != null && data.length > 0) {
            body.put("data", Base64.getEncoder().encodeToString(data));
        }
        if (eof) {
            body.put("eof", true);
        }
        return stdin(executionId, body);
    }

    private StdinWritten stdin(String executionId, Map<String, Object> body) {
        return send(request("/v1/executions/" + encodePath(executionId) + "/stdin", Duration.ZERO)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(encode(body))).build(), StdinWritten.class);
    }

    public ExecutionView cancel(String executionId) {
        String path = "/v1/executions/" + encodePath(executionId) + "/cancel";
        return send(request(path, Duration.ZERO).POST(HttpRequest.BodyPublishers.noBody()).build(), ExecutionView.class);
    }

    /**
     * Reports a run's progress ({@code percent} 0-100 and/or {@code message}, up to 500 characters;
     * either may be null, not both). Only a run's own token may, for its own execution: from inside
     * a run, {@link #fromRunEnv()} and {@code System.getenv("OUTRUN_EXECUTION_ID")}. At most one
     * report per 250 ms per execution ({@link ApiException} {@code progress_too_fast}); the latest
     * shows in every poll as {@link ExecutionView#progress()}.
     */
    public ProgressView progress(String executionId, Integer percent, String message) {
        Map<String, Object> body = new LinkedHashMap<>();
        if (percent != null) {
            body.put("percent", percent);
        }
        if (message != null) {
            body.put("message", message);
        }
        return send(request("/v1/executions/" + encodePath(executionId) + "/progress", Duration.ZERO)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(encode(body))).build(), ProgressView.class);
    }

    /** A page of this owner's executions, newest first; {@code status} and {@code after} may be null. */
    public ExecutionPage list(String status, int limit, String after) {
        return list(status, Map.of(), limit, after);
    }

    /** As {@link #list(String, int, String)}, only executions that carry every one of {@code labels}. */
    public ExecutionPage list(String status, Map<String, String> labels, int limit, String after) {
        StringBuilder labelQuery = new StringBuilder();
        labels.forEach((k, v) -> labelQuery.append("&label=").append(URLEncoder.encode(k + "=" + v, StandardCharsets.UTF_8)));
        String q = query("status", status, "limit", limit > 0 ? String.valueOf(limit) : null, "after", after);
        String path = "/v1/executions" + (q.isEmpty() && labelQuery.length() > 0 ? "?" + labelQuery.substring(1) : q + labelQuery);
        return send(request(path, Duration.ZERO).GET().build(), ExecutionPage.class);
    }

    /** True when the node answers its health check. */
    public boolean healthy() {
        try {
            HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(base.resolve("/health"))
                    .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
            return r.statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Sets this owner's secret {@code name} (an environment variable's name) to {@code value}; a run
     * that names it in {@link SubmitRequest#withSecrets} gets it as env, masked in its output.
     */
    public SecretList.Item putSecret(String name, String value) {
        return send(request("/v1/secrets/" + encodePath(name), Duration.ZERO).header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofByteArray(encode(Map.of("value", value)))).build(),
                SecretList.Item.class);
    }

    /**
     * Makes (or rotates) this owner's webhook signing secret, {@code whsec_…}: shown only in this
     * answer; verify each webhook's {@code webhook-signature} with it.
     */
    public String rotateWebhookSecret() {
        return send(request("/v1/webhook-secret", Duration.ZERO).POST(HttpRequest.BodyPublishers.noBody()).build(),
                JsonNode.class).get("secret").asText();
    }

    /**
     * Makes a recurring schedule: each firing runs {@code request.submission()} as a new execution
     * labelled {@code schedule=NAME}. The same schedule again answers it; another of that name is an
     * {@link ApiException} {@code schedule_exists}.
     */
    public Schedule createSchedule(Schedule.Request request) {
        return send(request("/v1/schedules", Duration.ZERO).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(encode(request))).build(), Schedule.class);
    }

    /** This owner's schedules, by name. */
    public Schedule.Listing schedules() {
        return send(request("/v1/schedules", Duration.ZERO).GET().build(), Schedule.Listing.class);
    }

    /** Pauses a schedule: it fires nothing until {@link #resumeSchedule}. An unknown one is {@code schedule_not_found}. */
    public Schedule pauseSchedule(String name) {
        return send(request("/v1/schedules/" + encodePath(name) + "/pause", Duration.ZERO)
                .POST(HttpRequest.BodyPublishers.noBody()).build(), Schedule.class);
    }

    /** Resumes a paused schedule: it fires from now on (nothing due while paused is made up for). */
    public Schedule resumeSchedule(String name) {
        return send(request("/v1/schedules/" + encodePath(name) + "/resume", Duration.ZERO)
                .POST(HttpRequest.BodyPublishers.noBody()).build(), Schedule.class);
    }

    /** Deletes a schedule: no later firing runs anything. An unknown one is {@code schedule_not_found}. */
    public void deleteSchedule(String name) {
        send(request("/v1/schedules/" + encodePath(name), Duration.ZERO).DELETE().build(), Void.class);
    }

    /** This owner's secrets: names and times, never values. */
    public SecretList secrets() {
        return send(request("/v1/secrets", Duration.ZERO).GET().build(), SecretList.class);
    }

    /** Deletes this owner's secret {@code name}; an unknown one is an {@link ApiException} {@code secret_not_found}. */
    public void deleteSecret(String name) {
        send(request("/v1/secrets/" + encodePath(name), Duration.ZERO).DELETE().build(), Void.class);
    }

    /** What was collected after the command ended, and what was not (with why). */
    public ArtifactList artifacts(String executionId) {
        return send(request("/v1/executions/" + encodePath(executionId) + "/artifacts", Duration.ZERO).GET().build(),
                ArtifactList.class);
    }

    /**
     * Streams one artifact into {@code out} (never whole in memory); {@code name} is its path in
     * the workdir, or {@code stdout} / {@code stderr}. Returns the bytes written.
     */
    public long download(String executionId, String name, OutputStream out) {
        return download(executionId, name, out, 0, -1);
    }

    /** As {@link #download(String, String, OutputStream)}, only {@code length} bytes from {@code offset} ({@code -1}: to the end). */
    public long download(String executionId, String name, OutputStream out, long offset, long length) {
        StringJoiner path = new StringJoiner("/");
        for (String part : name.split("/")) {
            path.add(encodePath(part));
        }
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(base + "/v1/executions/" + encodePath(executionId)
                        + "/artifacts/" + path))
                .timeout(Duration.ofMinutes(30))
                .header("Authorization", "Bearer " + (token == null ? "" : token.strip()))
                .headers(offset > 0 || length >= 0 ? new String[] {"Range", "bytes=" + offset + "-"
                        + (length >= 0 ? String.valueOf(offset + Math.max(0, length - 1)) : "")} : new String[] {"Accept", "*/*"})
                .GET();
        if (channel != null) {
            builder.header("Outrun-Channel", channel);
        }
        HttpRequest request = builder.build();
        HttpResponse<InputStream> response;
        try {
            response = http.send(request, HttpResponse.BodyHandlers.ofInputStream());
        } catch (IOException e) {
            throw new UnreachableException("cannot reach the Outrun API at " + base + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UnreachableException("interrupted while downloading from " + base, e);
        }
        try (InputStream in = response.body()) {
            if (response.statusCode() == 416) {
                return 0; // past the end: nothing more to read
            }
            if (response.statusCode() >= 400) {
                JsonNode body = json.readTree(in.readNBytes(64 * 1024));
                JsonNode error = body == null ? null : body.path("error");
                throw ApiException.of(response.statusCode(), error == null ? "unknown" : error.path("code").asText("unknown"),
                        error == null ? "" : error.path("message").asText(""), body == null ? null : body.path("guidance").asText(null));
            }
            return in.transferTo(out);
        } catch (IOException e) {
            throw new UnreachableException("the download of " + name + " from " + base + " broke: " + e, e);
        }
    }

    // --- plumbing -----------------------------------------------------------------------------

    private HttpRequest.Builder request(String path, Duration wait) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path))
                .timeout(wait.plus(SLACK))
                .header("Accept", "application/json");
        if (channel != null) {
            b.header("Outrun-Channel", channel);
        }
        if (token != null && !token.isBlank()) {
            b.header("Authorization", "Bearer " + token.strip());
        }
        return b;
    }

    private <T> T send(HttpRequest request, Class<T> type) {
        HttpResponse<byte[]> response;
        try {
            response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new UnreachableException("cannot reach the Outrun API at " + base + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UnreachableException("interrupted while waiting for the Outrun API at " + base, e);
        }
        if (type == Void.class && response.statusCode() == 204) {
            return null; // deleted: no body
        }
        JsonNode body;
        try {
            body = json.readTree(response.body());
        } catch (IOException e) {
            throw new UnreachableException("the answer from " + request.uri() + " (HTTP " + response.statusCode()
                    + ") is not JSON: is " + base + " an Outrun API?", e);
        }
        if (response.statusCode() >= 400 || (body != null && "error".equals(body.path("status").asText(null)) && body.has("error"))) {
            JsonNode error = body == null ? null : body.path("error");
            if (error == null || error.isMissingNode()) {
                throw new UnreachableException("HTTP " + response.statusCode() + " from " + request.uri()
                        + " without Outrun's error shape", null);
            }
            throw ApiException.of(response.statusCode(), error.path("code").asText("unknown"),
                    error.path("message").asText(""), body.path("guidance").asText(null));
        }
        try {
            return json.treeToValue(body, type);
        } catch (IOException e) {
            throw new UnreachableException("unexpected answer from " + request.uri() + ": " + e.getMessage(), e);
        }
    }

    private byte[] encode(Object body) {
        try {
            return json.writeValueAsBytes(body);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot encode the request", e);
        }
    }

    private static Duration waitOf(Long waitMs) {
        return waitMs == null || waitMs <= 0 ? Duration.ZERO : Duration.ofMillis(waitMs);
    }

    private static String encodePath(String segment) {
        return URLEncoder.encode(Objects.requireNonNull(segment, "executionId"), StandardCharsets.UTF_8).replace("+", "%20");
    }

    private static String query(String... pairs) {
        StringJoiner q = new StringJoiner("&", "?", "").setEmptyValue("");
        for (int i = 0; i < pairs.length; i += 2) {
            if (pairs[i + 1] != null) {
                q.add(pairs[i] + "=" + URLEncoder.encode(pairs[i + 1], StandardCharsets.UTF_8));
            }
        }
        return q.toString();
    }
}
