package io.outrun.api.http;

import io.outrun.worker.lease.LeaseStore;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.outrun.client.wire.Json;
import io.outrun.client.wire.SubmitRequest;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * /openapi.json against the real server: every answer a route really gives (status, headers,
 * required properties) is one the document declares for it.
 */
class OpenApiIT {

    private static ApiHarness api;
    private static JsonNode doc;
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        api = ApiHarness.start();
        doc = Json.mapper().readTree(api.send("GET", "/openapi.json", null, null).body());
    }

    @AfterAll
    static void stop() {
        api.close();
    }

    @Test
    void everyOperationIsNamedAndDeclaresTheStatusesEveryRouteCanAnswer() {
        assertThat(doc.path("servers")).isNotEmpty();
        Set<String> ids = new HashSet<>();
        doc.path("paths").fields().forEachRemaining(path -> path.getValue().fields().forEachRemaining(op -> {
            String name = op.getKey().toUpperCase() + " " + path.getKey();
            assertThat(ids.add(op.getValue().path("operationId").asText())).as(name + " has a unique operationId").isTrue();
            JsonNode responses = op.getValue().path("responses");
            assertThat(responses.has("405")).as(name + " declares 405").isTrue();
            if (path.getKey().startsWith("/v1")) {
                assertThat(responses.has("401") && responses.has("503") && responses.has("500")).as(name).isTrue();
            }
        }));
        assertThat(ids).doesNotContain("");
    }

    @Test
    void realAnswersAreDeclaredWithTheirHeadersAndRequiredProperties() {
        String a = api.aliceToken;
        String id = api.alice().submit(SubmitRequest.of("sleep 100")).executionId();
        String key = "k-" + UUID.randomUUID();
        List<Call> calls = new ArrayList<>(List.of(
                new Call("POST", "/v1/executions", a, "{\"command\":\"echo hi\"}", "application/json", Map.of()),
                new Call("POST", "/v1/executions?output=none", a, "{\"command\":\"echo hi\"}", null, Map.of()),
                new Call("POST", "/v1/executions", a, "{\"command\":\"echo once\"}", "application/json", Map.of("Idempotency-Key", key)),
                new Call("POST", "/v1/executions", a, "{\"command\":\"echo once\"}", "application/json", Map.of("Idempotency-Key", key)),
                new Call("POST", "/v1/executions", a, "{\"command\":\"echo other\"}", "application/json", Map.of("Idempotency-Key", key)),
                new Call("POST", "/v1/executions", a, "{\"command\":\"x\",\"maxAttempts\":0}", "application/json", Map.of()),
                new Call("POST", "/v1/executions", a, "{\"command\":\"x\",\"image\":\"nope:1\"}", "application/json", Map.of()),
                new Call("POST", "/v1/executions", a, "command=x", "application/x-www-form-urlencoded", Map.of()),
                new Call("POST", "/v1/executions", a, "{\"command\":\"x\"}", "text/plain", Map.of()),
                new Call("POST", "/v1/executions", a, "{\"command\":\"" + "x".repeat(3 << 20) + "\"}", "application/json", Map.of()),
                new Call("POST", "/v1/executions", null, "{\"command\":\"x\"}", "application/json", Map.of()),
                new Call("GET", "/v1/executions", a, null, null, Map.of()),
                new Call("GET", "/v1/executions?limit=1000&label=a%3Db", a, null, null, Map.of()),
                new Call("GET", "/v1/executions?status=bogus", a, null, null, Map.of()),
                new Call("GET", "/v1/executions/" + id, a, null, null, Map.of()),
                new Call("GET", "/v1/executions/" + id + "?output=full", a, null, null, Map.of()),
                new Call("GET", "/v1/executions/" + id + "?output=bogus", a, null, null, Map.of()),
                new Call("GET", "/v1/executions/" + UUID.randomUUID(), a, null, null, Map.of()),
                new Call("GET", "/v1/executions/" + id + "/output", a, null, null, Map.of()),
                new Call("GET", "/v1/executions/" + id + "/output?cursor=bad", a, null, null, Map.of()),
                new Call("POST", "/v1/executions/" + id + "/cancel", a, null, null, Map.of()),
                new Call("POST", "/v1/executions/" + id + "/cancel", a, null, null, Map.of()),
                new Call("POST", "/v1/executions/" + UUID.randomUUID() + "/cancel", a, null, null, Map.of()),
                new Call("GET", "/health", null, null, null, Map.of()),
                new Call("GET", "/openapi.json", null, null, null, Map.of()),
                new Call("GET", "/metrics", null, null, null, Map.of())));
        for (String[] wrongMethod : new String[][] {{"DELETE", "/v1/executions"}, {"PUT", "/v1/executions/" + id},
                {"POST", "/health"}, {"DELETE", "/v1/executions/" + id + "/output"}}) {
            calls.add(new Call(wrongMethod[0], wrongMethod[1], a, null, null, Map.of()));
        }
        Set<String> seen = assertDeclared(calls);
        assertThat(seen).contains("200", "202", "400", "401", "404", "405", "409", "413", "415");
    }

    /**
     * What a run token's routes answer (issue 31): a child, its listing, progress (kept, too fast,
     * an owner's, another execution's), a route outside its scope, too deep a child, a token whose
     * attempt ended; and the JWKS and discovery documents, with no token.
     */
    @Test
    void runTokenAndIdentityAnswersAreDeclared() {
        io.outrun.core.identity.SigningKeys keys = new io.outrun.core.identity.SigningKeys(api.core().pool(),
                io.outrun.core.secrets.SecretsKey.fromBase64(io.outrun.core.secrets.SecretsKey.generate(), "test"));
        io.outrun.core.identity.TokenIssuer issuer = new io.outrun.core.identity.TokenIssuer(keys, api.base().toString());
        // A chain as deep as the server allows (3): the deepest may submit no child.
        List<io.outrun.core.execution.Execution> chain = new ArrayList<>();
        List<String> tokens = new ArrayList<>();
        String submitter = api.aliceToken;
        for (int depth = 0; depth <= io.outrun.core.identity.IdentityConfig.DEFAULT_MAX_CHILD_DEPTH; depth++) {
            HttpResponse<String> r = new Call("POST", "/v1/executions", submitter, "{\"command\":\"sleep 100\"}",
                    "application/json", Map.of()).send();
            assertThat(r.statusCode()).as(r.body()).isEqualTo(202);
            UUID id = UUID.fromString(json(r).path("executionId").asText());
            io.outrun.core.execution.Execution claimed = new LeaseStore(api.core().pool()).claim(id, "n/1", java.time.Duration.ofSeconds(60))
                    .orElseThrow();
            chain.add(claimed);
            submitter = issuer.issue(claimed, java.time.Instant.now()).apiToken();
            tokens.add(submitter);
        }
        String run = tokens.get(0);
        String runId = chain.get(0).id().toString();
        String childId = chain.get(1).id().toString();
        String deepest = tokens.get(tokens.size() - 1);
        String progress = "/v1/executions/" + runId + "/progress";
        List<Call> calls = new ArrayList<>(List.of(
                new Call("POST", "/v1/executions", run, "{\"command\":\"echo child\",\"cancelWithParent\":false}",
                        "application/json", Map.of()),
                new Call("POST", "/v1/executions", deepest, "{\"command\":\"echo too deep\"}", "application/json", Map.of()),
                new Call("GET", "/v1/executions", run, null, null, Map.of()),
                new Call("GET", "/v1/executions/" + childId + "?waitMs=10", run, null, null, Map.of()),
                new Call("GET", "/v1/executions/" + UUID.randomUUID(), run, null, null, Map.of()),
                new Call("POST", progress, run, "{\"percent\":40,\"message\":\"2 of 5 shards\"}", "application/json", Map.of()),
                new Call("POST", progress, run, "{\"percent\":41}", "application/json", Map.of()),
                new Call("POST", progress, api.aliceToken, "{\"percent\":41}", "application/json", Map.of()),
                new Call("POST", "/v1/executions/" + childId + "/progress", run, "{\"percent\":1}", "application/json", Map.of()),
                new Call("POST", "/v1/executions/" + runId + "/cancel", run, null, null, Map.of()),
                new Call("GET", "/v1/secrets", run, null, null, Map.of()),
                new Call("GET", "/v1/executions/" + runId, run, null, null, Map.of()),
                new Call("GET", "/.well-known/jwks.json", null, null, null, Map.of()),
                new Call("GET", "/.well-known/openid-configuration", null, null, null, Map.of()),
                new Call("POST", "/.well-known/jwks.json", null, null, null, Map.of())));
        Set<String> seen = assertDeclared(calls);
        assertThat(seen).contains("200", "202", "400", "403", "404", "405", "429");
        // The attempt ends: its token is refused on every route it reached.
        io.outrun.core.execution.Execution e = chain.get(0);
        new LeaseStore(api.core().pool()).finish(new io.outrun.core.store.Lease(e.id(), e.leaseEpoch(), e.attempt(), e.leaseHolder()),
                io.outrun.core.store.Outcome.withoutOutput(io.outrun.core.execution.ExecutionStatus.SUCCEEDED, 0, null, null));
        seen = assertDeclared(List.of(new Call("GET", "/v1/executions/" + runId, run, null, null, Map.of()),
                new Call("POST", progress, run, "{\"percent\":99}", "application/json", Map.of())));
        assertThat(seen).containsExactly("401");
    }

    /** Sends each call; its answer must be declared for its route, with the declared headers and required properties. */
    private static Set<String> assertDeclared(List<Call> calls) {
        Set<String> seen = new HashSet<>();
        for (Call call : calls) {
            HttpResponse<String> r = call.send();
            String status = String.valueOf(r.statusCode());
            seen.add(status);
            String path = call.path().split("\\?")[0].replaceAll("[0-9a-f-]{36}", "{id}");
            JsonNode item = doc.path("paths").path(path);
            assertThat(item.isMissingNode()).as(path + " is documented").isFalse();
            JsonNode op = item.path(call.method().toLowerCase());
            if (op.isMissingNode()) {
                // A method the path does not have: 405, declared on the path's operations.
                assertThat(status).as(call.method() + " " + path).isEqualTo("405");
                op = item.elements().next();
            }
            JsonNode response = resolve(op.path("responses").path(status));
            assertThat(response.isMissingNode()).as(call.method() + " " + call.path() + " answered " + status
                    + ", which the document does not declare: " + r.body().substring(0, Math.min(200, r.body().length())))
                    .isFalse();
            for (Iterator<String> headers = response.path("headers").fieldNames(); headers.hasNext(); ) {
                String header = headers.next();
                if (header.equals("Idempotent-Replayed") && !call.headers().containsKey("Idempotency-Key")) {
                    continue; // only on a replay
                }
                if (header.equals("Idempotent-Replayed") && r.statusCode() == 202 && !r.headers().firstValue(header).isPresent()) {
                    continue; // the first submit with a key
                }
                assertThat(r.headers().firstValue(header)).as(header + " on " + call.method() + " " + call.path()).isPresent();
            }
            // The schema of the media type answered (application/json, or e.g. the JWKS's application/jwk-set+json).
            String type = r.headers().firstValue("Content-Type").orElse("").split(";")[0].strip();
            JsonNode schema = response.path("content").path(type).path("schema");
            if (type.endsWith("json") && !response.path("content").isMissingNode()) {
                assertThat(response.path("content").has(type)).as(call.method() + " " + call.path() + " " + status
                        + " answered " + type + ", which the document does not declare").isTrue();
            }
            if (!schema.isMissingNode()) {
                requireProperties(json(r), schema, call.method() + " " + call.path() + " " + status);
            }
        }
        return seen;
    }

    @Test
    void aLimitAboveTheMaximumIsClampedAsDocumented() {
        for (int i = 0; i < 3; i++) {
            api.bob().submit(SubmitRequest.of("true"));
        }
        var page = api.bob().list(null, 1000, null);
        assertThat(page.executions()).hasSizeLessThanOrEqualTo(100);
        JsonNode limit = null;
        for (JsonNode p : doc.path("paths").path("/v1/executions").path("get").path("parameters")) {
            if (p.path("name").asText().equals("limit")) {
                limit = p;
            }
        }
        assertThat(limit).isNotNull();
        assertThat(limit.path("schema").has("maximum")).as("not refused: clamped").isFalse();
        assertThat(limit.path("description").asText()).contains("clamped");
    }

    private record Call(String method, String path, String token, String body, String contentType, Map<String, String> headers) {
        HttpResponse<String> send() {
            HttpRequest.Builder b = HttpRequest.newBuilder(api.base().resolve(path))
                    .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
            if (token != null) {
                b.header("Authorization", "Bearer " + token);
            }
            if (contentType != null) {
                b.header("Content-Type", contentType);
            }
            headers.forEach(b::header);
            try {
                return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
            } catch (IOException | InterruptedException e) {
                throw new AssertionError(method + " " + path, e);
            }
        }
    }

    private static JsonNode json(HttpResponse<String> r) {
        try {
            return Json.mapper().readTree(r.body());
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + r.body(), e);
        }
    }

    private static JsonNode resolve(JsonNode node) {
        while (node.has("$ref")) {
            JsonNode target = doc;
            for (String part : node.path("$ref").asText().substring(2).split("/")) {
                target = target.path(part);
            }
            node = target;
        }
        return node;
    }

    /** Every property the schema calls required is there, all the way down. */
    private static void requireProperties(JsonNode value, JsonNode schema, String where) {
        schema = resolve(schema);
        if (value == null || value.isNull()) {
            return;
        }
        for (JsonNode required : schema.path("required")) {
            assertThat(value.has(required.asText())).as(where + ": required " + required.asText() + " in " + value).isTrue();
        }
        for (Iterator<Map.Entry<String, JsonNode>> props = schema.path("properties").fields(); props.hasNext(); ) {
            Map.Entry<String, JsonNode> prop = props.next();
            JsonNode child = value.get(prop.getKey());
            if (child == null) {
                continue;
            }
            JsonNode childSchema = resolve(prop.getValue());
            if (childSchema.path("type").asText().equals("array")) {
                for (JsonNode element : child) {
                    requireProperties(element, childSchema.path("items"), where + "." + prop.getKey() + "[]");
                }
            } else {
                requireProperties(child, childSchema, where + "." + prop.getKey());
            }
        }
    }
}
