package io.outrun.worker.node;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.source.ImmutableJWKSet;
import com.nimbusds.jose.proc.DefaultJOSEObjectTypeVerifier;
import com.nimbusds.jose.proc.JWSVerificationKeySelector;
import com.nimbusds.jose.proc.SecurityContext;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import com.nimbusds.jwt.proc.BadJWTException;
import com.nimbusds.jwt.proc.DefaultJWTClaimsVerifier;
import com.nimbusds.jwt.proc.DefaultJWTProcessor;
import com.zaxxer.hikari.HikariDataSource;
import io.outrun.api.auth.TokenStore;
import io.outrun.core.identity.SigningKeys;
import io.outrun.core.secrets.SecretsKey;
import io.outrun.core.store.Database;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Issue 31's acceptance: a run has an identity, reaches Outrun's API from a sandbox with no
 * network, and acts there as its owner and no more. Against real parts: an {@code outrun api}
 * JVM and an {@code outrun worker} JVM with the Docker sandbox (network none) on the embedded
 * PostgreSQL, sharing one secrets key. The commands are Python (urllib) in the default image,
 * reaching {@code $OUTRUN_API} with {@code $OUTRUN_API_TOKEN}; the tokens they print are verified
 * here with nimbus-jose-jwt against the API's {@code /.well-known/jwks.json}, as any service would.
 * A run that must stay alive while the test looks reads a line of its stdin, which the test
 * writes when it is done looking.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class IdentityIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final String AUDIENCE = "https://svc.example";
    private static final Duration END = Duration.ofSeconds(90);

    /**
     * What every command's script starts with: {@code call(method, path, body, token)} against
     * {@code $OUTRUN_API}, answering (status, parsed JSON); {@code code(answer)} is an error's code.
     */
    private static final String PRELUDE = """
            import json, os, sys, time, urllib.request, urllib.error
            API = os.environ["OUTRUN_API"]
            TOKEN = os.environ["OUTRUN_API_TOKEN"]
            ME = os.environ["OUTRUN_EXECUTION_ID"]
            def call(method, path, body=None, token=TOKEN):
                headers = {"Content-Type": "application/json"}
                if token is not None:
                    headers["Authorization"] = "Bearer " + token
                data = json.dumps(body).encode() if body is not None else (b"" if method in ("POST", "PUT") else None)
                req = urllib.request.Request(API + path, data=data, method=method, headers=headers)
                try:
                    with urllib.request.urlopen(req, timeout=60) as r:
                        raw = r.read()
                        status = r.status
                except urllib.error.HTTPError as e:
                    raw = e.read()
                    status = e.code
                try:
                    return status, json.loads(raw or b"null")
                except ValueError:
                    return status, raw.decode("utf-8", "replace")
            def code(answer):
                return answer.get("error", {}).get("code") if isinstance(answer, dict) else answer
            def say(*words):
                print(*words, flush=True)
            def gate():
                sys.stdin.readline()
            """;

    @TempDir
    static Path dir;
    private static DatabaseConfig db;
    private static HikariDataSource pool;
    private static Path keyFile;
    private static ApiProcess api;
    private static WorkerProcess worker;
    private static String base;
    private static String alice;
    private static String bob;

    @BeforeAll
    static void fleet() throws Exception {
        Requirements.docker();
        db = TestDatabase.migrated(DatabaseConfig::new);
        pool = Database.pool(db, "identity-it");
        keyFile = dir.resolve("secrets-key");
        Files.writeString(keyFile, SecretsKey.generate());
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        base = "http://127.0.0.1:" + port;
        api = ApiProcess.start(db, port, "--public-url", base, "--secrets-key-file", keyFile.toString());
        worker = startWorker("identity-1");
        TokenStore tokens = new TokenStore(pool);
        alice = tokens.create("alice").token();
        bob = tokens.create("bob").token();
    }

    /** A worker with the Docker sandbox (network none by default), signing with the fleet's key. */
    private static WorkerProcess startWorker(String node) throws Exception {
        // Six slots: a parent and its four children at once, and a spare.
        return WorkerProcess.startWith(db, node, 6, "docker", "--api-url", base, "--public-url", base,
                "--secrets-key-file", keyFile.toString());
    }

    @AfterAll
    static void stop() throws Exception {
        if (worker != null) {
            worker.close();
        }
        if (api != null) {
            api.close();
        }
        if (pool != null) {
            pool.close();
        }
    }

    /** Case 1: the run's identity token verifies against the JWKS, as the discovery document names it. */
    @Test
    @Order(1)
    void anIdentityTokenVerifiesAgainstTheJwks() throws Exception {
        // A service reads the discovery document before the fleet's first run (no key yet) ...
        discovery();
        ObjectNode body = submission("echo \"$OUTRUN_ID_TOKEN\"");
        body.putObject("identity").put("audience", AUDIENCE);
        body.putObject("labels").put("team", "search");
        String id = submit(alice, body);
        JsonNode done = end(alice, id);
        assertThat(done.path("status").asText()).as(done.toString()).isEqualTo("succeeded");
        assertThat(done.path("identity").path("audience").asText()).as(done.toString()).isEqualTo(AUDIENCE);
        String token = done.path("stdout").path("text").asText().strip();
        assertThat(token).as("OUTRUN_ID_TOKEN; stderr: " + done.path("stderr").path("text").asText()).isNotEmpty();

        // ... and again on a token whose key it has not seen, as JWT libraries do: it verifies.
        Discovery d = discovery();

        JWTClaimsSet claims = verify(token, d, AUDIENCE, JOSEObjectType.JWT);
        assertThat(claims.getSubject()).isEqualTo("owner:alice");
        assertThat(claims.getAudience()).containsExactly(AUDIENCE);
        assertThat(claims.getStringClaim("execution_id")).isEqualTo(id);
        assertThat(claims.getLongClaim("attempt")).isEqualTo(1L);
        assertThat(claims.getJSONObjectClaim("labels")).containsEntry("team", "search");
        assertThat(claims.getClaim("scope")).isNull();
        // exp no later than the run's deadline (its start plus its timeout), and not much sooner.
        Instant deadline = Instant.parse(done.path("startedAt").asText()).plusMillis(done.path("timeoutMs").asLong());
        Instant exp = claims.getExpirationTime().toInstant();
        assertThat(exp).isBeforeOrEqualTo(deadline).isAfter(deadline.minusSeconds(30));
        assertThat(claims.getIssueTime()).isNotNull();
        String kid = SignedJWT.parse(token).getHeader().getKeyID();
        assertThat(kid).isNotBlank();
        assertThat(d.jwks().getKeyByKeyId(kid)).as("kid " + kid + " in " + d.jwksUri()).isNotNull();

        // Another audience, or a tampered payload, does not verify.
        assertThatThrownBy(() -> verify(token, d, "https://other.example", JOSEObjectType.JWT)).isInstanceOf(BadJWTException.class);
        String[] parts = token.split("\\.");
        String forged = parts[0] + "." + java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(
                SignedJWT.parse(token).getJWTClaimsSet().toJSONObject().toString().replace("alice", "bob")
                        .getBytes(StandardCharsets.UTF_8)) + "." + parts[2];
        assertThatThrownBy(() -> verify(forged, d, AUDIENCE, JOSEObjectType.JWT)).isInstanceOf(Exception.class);
        // An identity token is for other services: Outrun's own API does not take it.
        HttpResponse<String> replayed = send("GET", "/v1/executions/" + id, token, null);
        assertThat(replayed.statusCode()).as(replayed.body()).isEqualTo(401);

        // A run that asked for no identity gets no OUTRUN_ID_TOKEN (but still its run token).
        JsonNode plain = end(alice, submit(alice, submission(
                "echo \"id=${OUTRUN_ID_TOKEN:-none} api=${OUTRUN_API_TOKEN:+set}\"")));
        assertThat(plain.path("stdout").path("text").asText()).isEqualTo("id=none api=set\n");
    }

    /** Case 2: the run token works against the API while its attempt runs, and not after. */
    @Test
    @Order(2)
    void theRunTokenWorksWhileItsAttemptRunsAndNotAfter() throws Exception {
        Discovery d = discovery();
        String script = """
                status, me = call("GET", "/v1/executions/" + ME)
                say("own", status, me.get("executionId") if isinstance(me, dict) else me, me.get("status") if isinstance(me, dict) else "")
                status, answer = call("GET", "/v1/executions/" + ME, token=None)
                say("without", status)
                status, answer = call("GET", "/v1/executions/" + ME, token=TOKEN[:-4] + "AAAA")
                say("wrong", status)
                say("api", API)
                say("token", TOKEN)
                gate()
                """;
        ObjectNode body = python(script);
        String id = submit(alice, body);
        String out = awaitPrinted(alice, id, "token ");
        String token = line(out, "token");
        assertThat(line(out, "own")).isEqualTo("200 " + id + " running");
        // The bridge refuses what does not carry this attempt's token, before the API sees it.
        assertThat(line(out, "without")).isEqualTo("401");
        assertThat(line(out, "wrong")).isEqualTo("401");
        assertThat(line(out, "api")).isEqualTo("http://127.0.0.1:7171");

        JWTClaimsSet claims = verify(token, d, d.issuer() + "/v1", new JOSEObjectType("at+jwt"));
        assertThat(claims.getSubject()).isEqualTo("owner:alice");
        assertThat(claims.getStringClaim("execution_id")).isEqualTo(id);
        assertThat(claims.getStringClaim("scope")).isEqualTo("run");
        assertThat(claims.getJWTID()).isNotBlank();

        // On the API's public address too, while the attempt runs.
        HttpResponse<String> running = send("GET", "/v1/executions/" + id, token, null);
        assertThat(running.statusCode()).as(running.body()).isEqualTo(200);
        assertThat(JSON.readTree(running.body()).path("status").asText()).isEqualTo("running");

        writeStdin(alice, id, "done\n");
        JsonNode done = end(alice, id);
        assertThat(done.path("status").asText()).as(done.toString()).isEqualTo("succeeded");
        HttpResponse<String> after = send("GET", "/v1/executions/" + id, token, null);
        assertThat(after.statusCode()).as(after.body()).isEqualTo(401);
        assertThat(errorCode(after)).isEqualTo("run_ended");
        HttpResponse<String> submitAfter = send("POST", "/v1/executions", token, "{\"command\": \"true\"}");
        assertThat(submitAfter.statusCode()).as(submitAfter.body()).isEqualTo(401);
        assertThat(errorCode(submitAfter)).isEqualTo("run_ended");
    }

    /** Case 3: a run with no network fans out into three children through $OUTRUN_API and ends with their results. */
    @Test
    @Order(3)
    void aRunSubmitsThreeChildrenWaitsForThemAndEndsWithTheirResults() throws Exception {
        String script = """
                ids = []
                for n in (1, 2, 3):
                    status, child = call("POST", "/v1/executions", {"command": "echo %d" % (n * 10), "labels": {"shard": str(n)}})
                    if status != 202:
                        say("submit", status, child)
                        sys.exit(3)
                    ids.append(child["executionId"])
                total = 0
                for i in ids:
                    while True:
                        status, child = call("GET", "/v1/executions/%s?waitMs=20000" % i)
                        if status != 200:
                            say("wait", status, child)
                            sys.exit(4)
                        if child["status"] not in ("queued", "running"):
                            break
                    if child["status"] != "succeeded":
                        say("child", i, child["status"])
                        sys.exit(5)
                    total += int(child["stdout"]["text"])
                status, listed = call("GET", "/v1/executions")
                say("listed", status, " ".join(sorted(e["executionId"] for e in listed["executions"])) if status == 200 else listed)
                say("children", " ".join(ids))
                say("sum", total)
                """;
        String id = submit(alice, python(script));
        JsonNode done = end(alice, id);
        String out = done.path("stdout").path("text").asText();
        assertThat(done.path("status").asText()).as(out + done.path("stderr").path("text").asText()).isEqualTo("succeeded");
        assertThat(line(out, "sum")).isEqualTo("60");
        List<String> children = List.of(line(out, "children").split(" "));
        assertThat(children).hasSize(3).doesNotHaveDuplicates();
        // The run lists only its own children.
        assertThat(line(out, "listed")).isEqualTo("200 " + String.join(" ", children.stream().sorted().toList()));

        for (String child : children) {
            // Its owner's: alice reads it, bob does not find it.
            HttpResponse<String> r = send("GET", "/v1/executions/" + child, alice, null);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            JsonNode c = JSON.readTree(r.body());
            assertThat(c.path("status").asText()).isEqualTo("succeeded");
            assertThat(c.path("labels").path("parent").asText()).isEqualTo(id);
            assertThat(c.path("labels").has("shard")).isTrue();
            assertThat(c.path("parentId").asText()).isEqualTo(id);
            assertThat(c.path("cancelWithParent").asBoolean(false)).isTrue();
            assertThat(send("GET", "/v1/executions/" + child, bob, null).statusCode()).isEqualTo(404);
        }
        assertThat(owners(children)).containsOnly("alice");
        // The owner finds them by their label; the parent itself is a root.
        JsonNode labelled = JSON.readTree(send("GET", "/v1/executions?label="
                + URLEncoder.encode("parent=" + id, StandardCharsets.UTF_8), alice, null).body());
        List<String> found = new ArrayList<>();
        labelled.path("executions").forEach(e -> found.add(e.path("executionId").asText()));
        assertThat(found).containsExactlyInAnyOrderElementsOf(children);
        assertThat(done.path("parentId").isNull() || done.path("parentId").isMissingNode()).as(done.toString()).isTrue();
    }

    /** Case 4: the run token reaches its own run and children, and nothing else. */
    @Test
    @Order(4)
    void aRunTokenReachesNothingOutsideItsScope() throws Exception {
        String bobs = submit(bob, submission("true"));
        String alicesOther = submit(alice, submission("sleep 60"));
        String script = """
                BOBS = "%s"
                OTHER = "%s"
                UNKNOWN = "%s"
                for name, method, path, body in [
                        ("bob-get", "GET", "/v1/executions/" + BOBS, None),
                        ("bob-output", "GET", "/v1/executions/" + BOBS + "/output", None),
                        ("bob-cancel", "POST", "/v1/executions/" + BOBS + "/cancel", None),
                        ("other-get", "GET", "/v1/executions/" + OTHER, None),
                        ("other-events", "GET", "/v1/executions/" + OTHER + "/events", None),
                        ("other-artifacts", "GET", "/v1/executions/" + OTHER + "/artifacts", None),
                        ("other-cancel", "POST", "/v1/executions/" + OTHER + "/cancel", None),
                        ("other-progress", "POST", "/v1/executions/" + OTHER + "/progress", {"percent": 1}),
                        ("bob-progress", "POST", "/v1/executions/" + BOBS + "/progress", {"percent": 1}),
                        ("unknown-progress", "POST", "/v1/executions/" + UNKNOWN + "/progress", {"percent": 1}),
                        ("unknown-get", "GET", "/v1/executions/" + UNKNOWN, None),
                        ("own-stdin", "POST", "/v1/executions/" + ME + "/stdin", {"text": "x"}),
                        ("secrets-list", "GET", "/v1/secrets", None),
                        ("secrets-put", "PUT", "/v1/secrets/x", {"value": "abcdefgh"}),
                        ("admin-nodes", "GET", "/v1/admin/nodes", None),
                        ("schedules", "GET", "/v1/schedules", None),
                        ("workspaces", "GET", "/v1/workspaces", None),
                        ("webhook-secret", "POST", "/v1/webhook-secret", None),
                        ("own-cancel", "POST", "/v1/executions/" + ME + "/cancel", None)]:
                    status, answer = call(method, path, body)
                    say(name, status, code(answer))
                status, listed = call("GET", "/v1/executions")
                say("listed", status, len(listed["executions"]) if status == 200 else code(listed))
                """.formatted(bobs, alicesOther, java.util.UUID.randomUUID());
        String id = submit(alice, python(script));
        JsonNode done = end(alice, id);
        String out = done.path("stdout").path("text").asText();
        assertThat(done.path("status").asText()).as(out + done.path("stderr").path("text").asText()).isEqualTo("succeeded");
        Map<String, String> expected = new java.util.LinkedHashMap<>();
        // Another owner's ids, and its owner's executions that are neither itself nor its child: not found.
        for (String name : List.of("bob-get", "bob-output", "bob-cancel", "other-get", "other-events", "other-artifacts",
                "other-cancel", "unknown-get")) {
            expected.put(name, "404 execution_not_found");
        }
        // Routes outside a run's scope, its own stdin and cancel among them. Progress is for its
        // own id only: any other is refused alike, whether it exists or not, whoever owns it.
        for (String name : List.of("own-cancel", "own-stdin", "secrets-list", "secrets-put", "admin-nodes", "schedules",
                "workspaces", "webhook-secret", "other-progress", "bob-progress", "unknown-progress")) {
            expected.put(name, "403 outside_run_scope");
        }
        expected.put("listed", "200 0");
        for (Map.Entry<String, String> e : expected.entrySet()) {
            assertThat(line(out, e.getKey())).as(e.getKey() + " in:\n" + out).isEqualTo(e.getValue());
        }
        // Nothing happened to them: alice's other run still runs, no secret was set.
        JsonNode other = JSON.readTree(send("GET", "/v1/executions/" + alicesOther, alice, null).body());
        assertThat(other.path("cancelRequested").asBoolean()).isFalse();
        assertThat(send("GET", "/v1/secrets", alice, null).body()).doesNotContain("\"x\"");
        send("POST", "/v1/executions/" + alicesOther + "/cancel", alice, null);
    }

    /** Case 5: cancelling the parent cancels its children, all but the one that asked to outlive it. */
    @Test
    @Order(5)
    void cancellingTheParentCancelsItsChildren() throws Exception {
        String script = """
                ids = []
                for keep in (True, True, True, False):
                    status, child = call("POST", "/v1/executions", {"command": "sleep 300", "cancelWithParent": keep})
                    if status != 202:
                        say("submit", status, child)
                        sys.exit(3)
                    ids.append(child["executionId"])
                say("children", " ".join(ids))
                gate()
                """;
        String id = submit(alice, python(script));
        List<String> children = List.of(line(awaitPrinted(alice, id, "children "), "children").split(" "));
        assertThat(children).hasSize(4);
        for (String child : children) {
            Await.until(child + " running", END, () -> "running".equals(status(alice, child)));
        }
        JsonNode survivor = JSON.readTree(send("GET", "/v1/executions/" + children.get(3), alice, null).body());
        assertThat(survivor.path("cancelWithParent").asBoolean(true)).as(survivor.toString()).isFalse();

        HttpResponse<String> cancel = send("POST", "/v1/executions/" + id + "/cancel", alice, null);
        assertThat(cancel.statusCode()).as(cancel.body()).isBetween(200, 202);
        assertThat(end(alice, id).path("status").asText()).isEqualTo("cancelled");
        for (String child : children.subList(0, 3)) {
            JsonNode c = end(alice, child);
            assertThat(c.path("status").asText()).as(child + ": " + c).isEqualTo("cancelled");
        }
        // The child with cancelWithParent false keeps running, past the sweeper's check (about 5 s).
        Thread.sleep(6_000);
        assertThat(status(alice, children.get(3))).isEqualTo("running");
        send("POST", "/v1/executions/" + children.get(3) + "/cancel", alice, null);
        assertThat(end(alice, children.get(3)).path("status").asText()).isEqualTo("cancelled");
    }

    /** Case 6: progress posted from inside shows in the owner's poll within a second, the latest kept. */
    @Test
    @Order(6)
    void progressFromInsideShowsInAPollWithinASecond() throws Exception {
        String script = """
                def report(body):
                    for _ in range(20):
                        status, answer = call("POST", "/v1/executions/" + ME + "/progress", body)
                        if status != 429:
                            return status, answer
                        time.sleep(0.3)
                    return status, answer
                status, answer = report({"percent": 40, "message": "halfway"})
                say("first", status, json.dumps(answer.get("progress", answer) if isinstance(answer, dict) else answer, sort_keys=True))
                gate()
                status, answer = report({"percent": 90, "message": "almost"})
                say("second", status)
                gate()
                """;
        String id = submit(alice, python(script));
        JsonNode first = awaitProgress(id, 40);
        assertThat(first.path("progress").path("message").asText()).isEqualTo("halfway");
        // Only the run's own token reports progress: its owner's answers 403.
        HttpResponse<String> byOwner = send("POST", "/v1/executions/" + id + "/progress", alice, "{\"percent\": 99}");
        assertThat(byOwner.statusCode()).as(byOwner.body()).isEqualTo(403);
        assertThat(errorCode(byOwner)).isEqualTo("run_token_required");

        writeStdin(alice, id, "next\n");
        JsonNode second = awaitProgress(id, 90);
        assertThat(second.path("progress").path("message").asText()).isEqualTo("almost");
        writeStdin(alice, id, "end\n");
        JsonNode done = end(alice, id);
        String out = done.path("stdout").path("text").asText();
        assertThat(done.path("status").asText()).as(out + done.path("stderr").path("text").asText()).isEqualTo("succeeded");
        assertThat(line(out, "first")).startsWith("200 ").contains("\"percent\": 40", "\"message\": \"halfway\"");
        assertThat(line(out, "second")).isEqualTo("200");
        // The latest is kept after the end.
        assertThat(done.path("progress").path("percent").asInt()).isEqualTo(90);
        assertThat(done.path("progress").path("message").asText()).isEqualTo("almost");
    }

    /**
     * Case 7: after a rotation both keys are published; a token signed before it still verifies
     * (and a run's token still reaches the API), and a new run's tokens carry the new key.
     */
    @Test
    @Order(7)
    void aRotatedKeyStillVerifiesTokensIssuedBeforeTheRotation() throws Exception {
        String script = """
                say("id", os.environ["OUTRUN_ID_TOKEN"])
                gate()
                status, me = call("GET", "/v1/executions/" + ME)
                say("own", status)
                """;
        ObjectNode body = python(script);
        body.putObject("identity").put("audience", AUDIENCE);
        String before = submit(alice, body);
        String oldToken = line(awaitPrinted(alice, before, "id "), "id");
        String oldKid = SignedJWT.parse(oldToken).getHeader().getKeyID();
        verify(oldToken, discovery(), AUDIENCE, JOSEObjectType.JWT);

        SigningKeys.Rotated rotated = new SigningKeys(pool, SecretsKey.fromFile(keyFile)).rotate();
        assertThat(rotated.retiredKid()).isEqualTo(oldKid);
        assertThat(rotated.kid()).isNotEqualTo(oldKid);

        // Both keys published (an API node reads them afresh every few seconds).
        Discovery d = Await.until("both keys in the JWKS", Duration.ofSeconds(30), () -> {
            try {
                Discovery now = discovery();
                return now.jwks().getKeyByKeyId(rotated.kid()) != null ? now : null;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(d.jwks().getKeys()).extracting(k -> k.getKeyID()).contains(oldKid, rotated.kid());
        JWTClaimsSet claims = verify(oldToken, d, AUDIENCE, JOSEObjectType.JWT);
        assertThat(claims.getStringClaim("execution_id")).isEqualTo(before);
        // The run that started before the rotation still reaches the API with its token.
        writeStdin(alice, before, "go\n");
        JsonNode done = end(alice, before);
        assertThat(line(done.path("stdout").path("text").asText(), "own")).as(done.toString()).isEqualTo("200");

        // A new key signs only once published for SigningKeys.SIGN_AFTER (every JWKS has it by
        // then): made older here rather than waited for. A worker keeps the key it read for a
        // minute: a fresh one signs with the new key.
        // The old key older still (a fleet's key, made long before): within a second of 30 s old
        // itself, and newer than the new one, it would be the one picked.
        try (var c = pool.getConnection(); var ps = c.prepareStatement("UPDATE signing_keys SET created_at = CASE"
                + " WHEN kid = ? THEN now() - interval '31 seconds' ELSE now() - interval '1 hour' END WHERE kid IN (?, ?)")) {
            ps.setString(1, rotated.kid());
            ps.setString(2, rotated.kid());
            ps.setString(3, oldKid);
            assertThat(ps.executeUpdate()).isEqualTo(2);
        }
        worker.close();
        worker = startWorker("identity-2");
        ObjectNode after = submission("echo \"$OUTRUN_ID_TOKEN\"; python3 -c 'import os,urllib.request as u;"
                + " print(u.urlopen(u.Request(os.environ[\"OUTRUN_API\"] + \"/v1/executions/\" + os.environ[\"OUTRUN_EXECUTION_ID\"],"
                + " headers={\"Authorization\": \"Bearer \" + os.environ[\"OUTRUN_API_TOKEN\"]})).status)'");
        after.putObject("identity").put("audience", AUDIENCE);
        String afterId = submit(alice, after);
        JsonNode afterDone = end(alice, afterId);
        String[] lines = afterDone.path("stdout").path("text").asText().split("\n");
        assertThat(lines).as(afterDone.toString()).hasSize(2);
        String newToken = lines[0];
        assertThat(SignedJWT.parse(newToken).getHeader().getKeyID()).isEqualTo(rotated.kid());
        verify(newToken, discovery(), AUDIENCE, JOSEObjectType.JWT);
        // The API takes the new key's run tokens at once.
        assertThat(lines[1]).isEqualTo("200");
    }

    // ---- helpers ----

    record Discovery(String issuer, String jwksUri, JWKSet jwks) {
    }

    /** The discovery document and the key set it names, both fetched without a token. */
    private static Discovery discovery() throws Exception {
        HttpResponse<String> r = send("GET", "/.well-known/openid-configuration", null, null);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode doc = JSON.readTree(r.body());
        String issuer = doc.path("issuer").asText();
        assertThat(issuer).isEqualTo(base);
        String jwksUri = doc.path("jwks_uri").asText();
        assertThat(jwksUri).isEqualTo(base + "/.well-known/jwks.json");
        JWKSet jwks = JWKSet.load(URI.create(jwksUri).toURL());
        assertThat(jwks.getKeys()).allSatisfy(k -> assertThat(k.isPrivate()).isFalse());
        return new Discovery(issuer, jwksUri, jwks);
    }

    /** What any service does with a token: signature by a published key, type, issuer, audience, expiry. */
    private static JWTClaimsSet verify(String token, Discovery d, String audience, JOSEObjectType type) throws Exception {
        DefaultJWTProcessor<SecurityContext> processor = new DefaultJWTProcessor<>();
        processor.setJWSTypeVerifier(new DefaultJOSEObjectTypeVerifier<>(type));
        processor.setJWSKeySelector(new JWSVerificationKeySelector<>(JWSAlgorithm.ES256, new ImmutableJWKSet<>(d.jwks())));
        processor.setJWTClaimsSetVerifier(new DefaultJWTClaimsVerifier<>(audience,
                new JWTClaimsSet.Builder().issuer(d.issuer()).build(),
                Set.of("sub", "exp", "iat", "execution_id", "attempt")));
        JWTClaimsSet claims = processor.process(token, null);
        assertThat(claims.getExpirationTime()).isAfter(new Date());
        return claims;
    }

    /** A submission of {@code command} with a short timeout, stdin open for the gate. */
    private static ObjectNode submission(String command) {
        ObjectNode body = JSON.createObjectNode();
        body.put("command", command);
        body.put("timeoutMs", 120_000);
        return body;
    }

    /** {@code script} after the prelude, run by python3 in the sandbox, its stdin open for {@code gate()}. */
    private static ObjectNode python(String script) {
        ObjectNode body = submission("f=$(mktemp); cat >\"$f\" <<'PY'\n" + PRELUDE + script + "PY\nexec python3 \"$f\"");
        body.put("stdin", true);
        return body;
    }

    private static String submit(String token, ObjectNode body) throws IOException {
        HttpResponse<String> r = send("POST", "/v1/executions", token, JSON.writeValueAsString(body));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(202);
        return JSON.readTree(r.body()).path("executionId").asText();
    }

    /** Waits for the end of {@code id} with long polls. */
    private static JsonNode end(String token, String id) throws Exception {
        long deadline = System.nanoTime() + END.toNanos();
        while (true) {
            HttpResponse<String> r = send("GET", "/v1/executions/" + id + "?waitMs=20000", token, null);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            JsonNode e = JSON.readTree(r.body());
            String status = e.path("status").asText();
            if (!status.equals("queued") && !status.equals("running")) {
                return e;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(id + " did not end within " + END + ": " + e);
            }
        }
    }

    private static String status(String token, String id) {
        try {
            return JSON.readTree(send("GET", "/v1/executions/" + id, token, null).body()).path("status").asText();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** What {@code id} printed once {@code text} shows in it (it must still run: the gate holds it). */
    private static String awaitPrinted(String token, String id, String text) throws Exception {
        String[] last = {""};
        try {
            return Await.until("'" + text + "' printed by " + id, END, () -> {
                try {
                    JsonNode e = JSON.readTree(send("GET", "/v1/executions/" + id, token, null).body());
                    last[0] = e.toString();
                    String out = e.path("stdout").path("text").asText();
                    if (out.contains(text)) {
                        return out;
                    }
                    if (!Set.of("queued", "running").contains(e.path("status").asText())) {
                        throw new AssertionError(id + " ended before printing '" + text + "': " + e);
                    }
                    return null;
                } catch (IOException ex) {
                    throw new java.io.UncheckedIOException(ex);
                }
            });
        } catch (AssertionError timedOut) {
            throw new AssertionError(timedOut.getMessage() + "; last seen: " + last[0], timedOut);
        }
    }

    /**
     * Polls {@code id} until its progress shows {@code percent}, while it runs; the poll that
     * first shows it comes within a second of its storing (the database's clock, on this host).
     */
    private static JsonNode awaitProgress(String id, int percent) throws Exception {
        JsonNode seen = Await.until("progress " + percent + " of " + id, END, () -> {
            try {
                JsonNode e = JSON.readTree(send("GET", "/v1/executions/" + id, alice, null).body());
                assertThat(e.path("status").asText()).as(e.toString()).isIn("queued", "running");
                return e.path("progress").path("percent").asInt(-1) == percent ? e : null;
            } catch (IOException ex) {
                throw new java.io.UncheckedIOException(ex);
            }
        });
        Instant polled = Instant.now();
        assertThat(seen.path("status").asText()).isEqualTo("running");
        Instant at = Instant.parse(seen.path("progress").path("at").asText());
        assertThat(Duration.between(at, polled)).as("from the progress's storing to the poll that showed it")
                .isLessThanOrEqualTo(Duration.ofSeconds(1));
        return seen;
    }

    private static void writeStdin(String token, String id, String text) throws IOException {
        ObjectNode body = JSON.createObjectNode().put("text", text);
        HttpResponse<String> r = send("POST", "/v1/executions/" + id + "/stdin", token, JSON.writeValueAsString(body));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    }

    /** The rest of the line of {@code out} that starts with {@code key} and a space. */
    private static String line(String out, String key) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(key) + " (.*)$").matcher(out);
        assertThat(m.find()).as("a line '" + key + " …' in:\n" + out).isTrue();
        return m.group(1);
    }

    private static String errorCode(HttpResponse<String> r) throws IOException {
        return JSON.readTree(r.body()).path("error").path("code").asText();
    }

    /** The owners of {@code ids} as stored. */
    private static List<String> owners(List<String> ids) throws Exception {
        List<String> owners = new ArrayList<>();
        try (var c = pool.getConnection(); var ps = c.prepareStatement("SELECT owner FROM executions WHERE id = ?::uuid")) {
            for (String id : ids) {
                ps.setString(1, id);
                try (var rs = ps.executeQuery()) {
                    if (rs.next()) {
                        owners.add(rs.getString(1));
                    }
                }
            }
        }
        assertThat(owners).hasSameSizeAs(ids);
        return owners;
    }

    private static HttpResponse<String> send(String method, String path, String token, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(60))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        try {
            return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(method + " " + path, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** A real {@code outrun api} in its own JVM, on the port its {@code --public-url} names. */
    static final class ApiProcess implements AutoCloseable {
        private final Process process;
        private final Path log;

        private ApiProcess(Process process, Path log) {
            this.process = process;
            this.log = log;
        }

        static ApiProcess start(DatabaseConfig db, int port, String... extraArgs) throws Exception {
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx256m", "-jar", WorkerProcess.jar().toString(), "api",
                    "--db-url", db.url(), "--db-user", db.user(), "--db-password", db.password(),
                    "--bind", "127.0.0.1", "--port", Integer.toString(port)));
            cmd.addAll(List.of(extraArgs));
            Path logs = Path.of("target", "worker-logs");
            Files.createDirectories(logs);
            Path log = logs.resolve("identity-api-" + System.nanoTime() + ".log");
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            ApiProcess api = new ApiProcess(p, log);
            try {
                Await.until("outrun api to listen", Duration.ofSeconds(60), () -> {
                    String text = api.log();
                    if (!text.contains("API listening on") && !p.isAlive()) {
                        throw new IllegalStateException("outrun api exited with " + p.exitValue() + ":\n" + text);
                    }
                    return text.contains("API listening on");
                });
            } catch (AssertionError timedOut) {
                api.close();
                throw new IllegalStateException(timedOut.getMessage() + ":\n" + api.log());
            } catch (RuntimeException failed) {
                api.close();
                throw failed;
            }
            return api;
        }

        String log() {
            try {
                return Files.readString(log);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        @Override
        public void close() throws InterruptedException {
            if (process.isAlive()) {
                process.destroy();
                if (!process.waitFor(15, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(10, TimeUnit.SECONDS);
                }
            }
        }
    }
}
