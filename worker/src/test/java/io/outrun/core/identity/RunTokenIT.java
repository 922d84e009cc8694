package io.outrun.core.identity;

import io.outrun.worker.lease.LeaseStore;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jwt.SignedJWT;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.api.http.ApiHarness;
import io.outrun.core.secrets.SecretsKey;
import io.outrun.core.store.Lease;
import io.outrun.core.store.Outcome;
import io.outrun.core.store.OutputStore;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Run tokens against a real API node and PostgreSQL (issue 31): what a run may do with its
 * token, what it may not, and that the token dies with its attempt. The attempts are claimed
 * and ended through the lease store, as a worker does; the Docker side is in the worker's ITs.
 */
class RunTokenIT {

    private static final Duration TTL = Duration.ofSeconds(30);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static ApiHarness api;
    private static TokenIssuer issuer;
    private static SigningKeys keys;

    @BeforeAll
    static void start() {
        api = ApiHarness.start();
        keys = new SigningKeys(api.core().pool(), SecretsKey.fromBase64(SecretsKey.generate(), "test"));
        issuer = new TokenIssuer(keys, api.base().toString());
    }

    @AfterAll
    static void stop() {
        api.close();
    }

    /** A running execution of alice's, claimed as a worker claims it, with its tokens. */
    private record Run(Execution execution, RunTokens tokens) {
        UUID id() {
            return execution.id();
        }
    }

    private Run running(String body) throws Exception {
        UUID id = submit(api.aliceToken, body);
        Execution claimed = new LeaseStore(api.core().pool()).claim(id, "n/1", TTL).orElseThrow();
        return new Run(claimed, issuer.issue(claimed, Instant.now()));
    }

    private UUID submit(String token, String body) throws Exception {
        HttpResponse<String> r = api.send("POST", "/v1/executions", token, body);
        assertThat(r.statusCode()).as(r.body()).isIn(200, 202);
        return UUID.fromString(json(r).path("executionId").asText());
    }

    private static JsonNode json(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body());
    }

    private static String code(HttpResponse<String> r) throws Exception {
        return json(r).path("error").path("code").asText();
    }

    @Test
    void aRunActsAsItsOwnerOnItselfAndItsChildrenOnly() throws Exception {
        Run run = running("{\"command\": \"sleep 60\"}");
        String token = run.tokens().apiToken();
        assertThat(run.tokens().idToken()).as("no identity asked").isNull();

        HttpResponse<String> self = api.send("GET", "/v1/executions/" + run.id(), token, null);
        assertThat(self.statusCode()).as(self.body()).isEqualTo(200);

        // A child: labelled with its parent, one deeper, alice's.
        HttpResponse<String> submitted = api.send("POST", "/v1/executions", token,
                "{\"command\": \"echo child\", \"labels\": {\"shard\": \"1\"}}");
        assertThat(submitted.statusCode()).as(submitted.body()).isEqualTo(202);
        JsonNode child = json(submitted);
        UUID childId = UUID.fromString(child.path("executionId").asText());
        assertThat(child.path("parentId").asText()).isEqualTo(run.id().toString());
        assertThat(child.path("labels").path("parent").asText()).isEqualTo(run.id().toString());
        assertThat(child.path("labels").path("shard").asText()).isEqualTo("1");
        assertThat(child.path("cancelWithParent").asBoolean()).isTrue();
        Execution stored = api.core().submissions().find(childId, OutputStore.Read.NONE).orElseThrow();
        assertThat(stored.owner()).isEqualTo("alice");
        assertThat(stored.lineage().depth()).isEqualTo(1);
        assertThat(api.send("GET", "/v1/executions/" + childId, api.aliceToken, null).statusCode()).isEqualTo(200);

        // Its listing holds its children only.
        UUID other = submit(api.aliceToken, "{\"command\": \"echo other\"}");
        JsonNode listed = json(api.send("GET", "/v1/executions", token, null));
        assertThat(listed.path("executions").findValuesAsText("executionId")).containsExactly(childId.toString());

        assertThat(api.send("GET", "/v1/executions/" + childId, token, null).statusCode()).isEqualTo(200);
        assertThat(api.send("GET", "/v1/executions/" + childId + "/output", token, null).statusCode()).isEqualTo(200);
        // Another execution of the same owner, and another owner's: as unknown.
        HttpResponse<String> notChild = api.send("GET", "/v1/executions/" + other, token, null);
        assertThat(notChild.statusCode()).isEqualTo(404);
        assertThat(code(notChild)).isEqualTo("execution_not_found");
        UUID bobs = submit(api.bobToken, "{\"command\": \"echo bob\"}");
        assertThat(api.send("GET", "/v1/executions/" + bobs, token, null).statusCode()).isEqualTo(404);
        assertThat(api.send("POST", "/v1/executions/" + bobs + "/cancel", token, null).statusCode()).isEqualTo(404);
        assertThat(api.send("GET", "/v1/executions/not-a-uuid", token, null).statusCode()).isEqualTo(404);
        // Routes outside its scope.
        for (String[] route : new String[][] {{"GET", "/v1/secrets"}, {"PUT", "/v1/secrets/X"}, {"GET", "/v1/admin/nodes"},
                {"GET", "/v1/workspaces"}, {"POST", "/v1/webhook-secret"}, {"GET", "/v1/schedules"},
                {"POST", "/v1/executions/" + run.id() + "/cancel"}, {"POST", "/v1/executions/" + childId + "/stdin"},
                {"POST", "/v1/executions/" + childId + "/progress"}}) {
            HttpResponse<String> r = api.send(route[0], route[1], token, route[0].equals("GET") ? null : "{}");
            assertThat(r.statusCode()).as(route[0] + " " + route[1] + ": " + r.body()).isEqualTo(403);
            assertThat(code(r)).isEqualTo("outside_run_scope");
        }
        // Its owner cannot forge a child by label.
        assertThat(api.send("POST", "/v1/executions", api.aliceToken,
                "{\"command\": \"true\", \"labels\": {\"parent\": \"" + run.id() + "\"}}").statusCode()).isEqualTo(400);

        // It may cancel its child.
        HttpResponse<String> cancelled = api.send("POST", "/v1/executions/" + childId + "/cancel", token, null);
        assertThat(cancelled.statusCode()).as(cancelled.body()).isEqualTo(200);
        assertThat(json(cancelled).path("status").asText()).isEqualTo("cancelled");
        finish(run);
    }

    @Test
    void theTokenDiesWithItsAttempt() throws Exception {
        Run run = running("{\"command\": \"sleep 60\"}");
        String token = run.tokens().apiToken();
        assertThat(api.send("GET", "/v1/executions/" + run.id(), token, null).statusCode()).isEqualTo(200);
        finish(run);
        HttpResponse<String> after = api.send("GET", "/v1/executions/" + run.id(), token, null);
        assertThat(after.statusCode()).as(after.body()).isEqualTo(401);
        assertThat(code(after)).isEqualTo("run_ended");
        assertThat(api.send("POST", "/v1/executions", token, "{\"command\": \"true\"}").statusCode()).isEqualTo(401);
        // A forged or altered token is no token.
        String tampered = token.substring(0, token.length() - 4) + (token.endsWith("AAAA") ? "BBBB" : "AAAA");
        HttpResponse<String> forged = api.send("GET", "/v1/executions/" + run.id(), tampered, null);
        assertThat(forged.statusCode()).isEqualTo(401);
        assertThat(code(forged)).isEqualTo("identity_required");
    }

    @Test
    void aHandedBackAttemptsTokenDoesNotComeBackWithItsRerun() throws Exception {
        Run first = running("{\"command\": \"sleep 60\"}");
        String old = first.tokens().apiToken();
        assertThat(api.send("GET", "/v1/executions/" + first.id(), old, null).statusCode()).isEqualTo(200);
        // A drain hands the run back without spending its attempt: the next claim has the same number.
        Execution e = first.execution();
        new LeaseStore(api.core().pool()).drainBack(new Lease(e.id(), e.leaseEpoch(), e.attempt(), e.leaseHolder())).orElseThrow();
        Execution again = new LeaseStore(api.core().pool()).claim(e.id(), "n/2", TTL).orElseThrow();
        assertThat(again.attempt()).isEqualTo(e.attempt());
        HttpResponse<String> revived = api.send("GET", "/v1/executions/" + first.id(), old, null);
        assertThat(revived.statusCode()).as("the drained attempt's token: " + revived.body()).isEqualTo(401);
        assertThat(code(revived)).isEqualTo("run_ended");
        assertThat(api.send("POST", "/v1/executions/" + first.id() + "/progress", old, "{\"percent\": 5}").statusCode())
                .isEqualTo(401);
        Run second = new Run(again, issuer.issue(again, Instant.now()));
        assertThat(api.send("GET", "/v1/executions/" + first.id(), second.tokens().apiToken(), null).statusCode()).isEqualTo(200);
        finish(second);
    }

    @Test
    void aTokenDiesWithItsLeaseBeforeTheReap() throws Exception {
        Run run = running("{\"command\": \"sleep 60\"}");
        String token = run.tokens().apiToken();
        assertThat(api.send("GET", "/v1/executions/" + run.id(), token, null).statusCode()).isEqualTo(200);
        // Its node stopped renewing (SIGKILLed): the lease ran out; no sweep has re-driven it yet.
        try (var c = api.core().pool().getConnection(); var ps = c.prepareStatement(
                "UPDATE leases SET expires_at = now() - interval '1 second' WHERE execution_id = ?")) {
            ps.setObject(1, run.id());
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
        HttpResponse<String> after = api.send("GET", "/v1/executions/" + run.id(), token, null);
        assertThat(after.statusCode()).as(after.body()).isEqualTo(401);
        assertThat(code(after)).isEqualTo("run_ended");
    }

    @Test
    void anIdentityTokenVerifiesAgainstTheJwksAndIsNoKeyToTheApi() throws Exception {
        Run run = running("{\"command\": \"sleep 60\", \"timeoutMs\": 120000, \"labels\": {\"team\": \"ml\"},"
                + " \"identity\": {\"audience\": \"https://svc.example\"}}");
        assertThat(run.execution().identityAudience()).isEqualTo("https://svc.example");
        String idToken = run.tokens().idToken();
        assertThat(idToken).isNotNull();

        JsonNode discovery = json(api.send("GET", "/.well-known/openid-configuration", null, null));
        assertThat(discovery.path("issuer").asText()).isEqualTo(api.base().toString());
        JWKSet jwks = JWKSet.parse(api.send("GET", "/.well-known/jwks.json", null, null).body());
        SignedJWT jwt = SignedJWT.parse(idToken);
        assertThat(jwt.verify(new com.nimbusds.jose.crypto.ECDSAVerifier(
                jwks.getKeyByKeyId(jwt.getHeader().getKeyID()).toECKey()))).isTrue();
        assertThat(jwt.getJWTClaimsSet().getAudience()).containsExactly("https://svc.example");
        assertThat(jwt.getJWTClaimsSet().getSubject()).isEqualTo("owner:alice");
        assertThat(jwt.getJWTClaimsSet().getIssuer()).isEqualTo(discovery.path("issuer").asText());
        assertThat(jwt.getJWTClaimsSet().getStringClaim("execution_id")).isEqualTo(run.id().toString());
        assertThat(jwt.getJWTClaimsSet().getJSONObjectClaim("labels")).containsEntry("team", "ml");
        assertThat(jwt.getJWTClaimsSet().getExpirationTime().toInstant())
                .isBefore(Instant.now().plusSeconds(121)).isAfter(Instant.now().plusSeconds(100));

        HttpResponse<String> replayed = api.send("GET", "/v1/executions/" + run.id(), idToken, null);
        assertThat(replayed.statusCode()).as("an identity token is for other services").isEqualTo(401);
        // An identity without an audience gets the default: the issuer.
        Run byDefault = running("{\"command\": \"true\", \"identity\": {}}");
        assertThat(SignedJWT.parse(byDefault.tokens().idToken()).getJWTClaimsSet().getAudience())
                .containsExactly(api.base().toString());
        finish(run);
        finish(byDefault);
    }

    @Test
    void progressFromTheRunShowsInItsOwnersPoll() throws Exception {
        Run run = running("{\"command\": \"sleep 60\"}");
        HttpResponse<String> reported = api.send("POST", "/v1/executions/" + run.id() + "/progress",
                run.tokens().apiToken(), "{\"percent\": 40, \"message\": \"2 of 5 shards\"}");
        assertThat(reported.statusCode()).as(reported.body()).isEqualTo(200);
        JsonNode polled = json(api.send("GET", "/v1/executions/" + run.id(), api.aliceToken, null));
        assertThat(polled.path("progress").path("percent").asInt()).isEqualTo(40);
        assertThat(polled.path("progress").path("message").asText()).isEqualTo("2 of 5 shards");

        HttpResponse<String> tooSoon = api.send("POST", "/v1/executions/" + run.id() + "/progress",
                run.tokens().apiToken(), "{\"percent\": 41}");
        assertThat(tooSoon.statusCode()).isEqualTo(429);
        assertThat(code(tooSoon)).isEqualTo("progress_too_fast");
        HttpResponse<String> byOwner = api.send("POST", "/v1/executions/" + run.id() + "/progress", api.aliceToken,
                "{\"percent\": 50}");
        assertThat(byOwner.statusCode()).isEqualTo(403);
        assertThat(code(byOwner)).isEqualTo("run_token_required");
        // Bodies are checked before the rate: each answers 400 however soon it comes.
        for (String bad : new String[] {"{\"percent\": 101}", "{}", "{\"percent\": \"x\"}", "{\"pct\": 1}", "[1]"}) {
            HttpResponse<String> r = api.send("POST", "/v1/executions/" + run.id() + "/progress", run.tokens().apiToken(), bad);
            assertThat(r.statusCode()).as(bad + ": " + r.body()).isEqualTo(400);
        }
        finish(run);
    }

    @Test
    void aChildHoldsNoMoreThanItsParent() throws Exception {
        Run run = running("{\"command\": \"sleep 60\", \"identity\": {\"audience\": \"svc\"}}");
        String token = run.tokens().apiToken();
        for (String body : new String[] {
                "{\"command\": \"true\", \"secrets\": [\"PROD_PW\"]}",
                "{\"command\": \"true\", \"identity\": {\"audience\": \"other\"}}",
                "{\"command\": \"true\", \"workspace\": \"data\"}"}) {
            HttpResponse<String> r = api.send("POST", "/v1/executions", token, body);
            assertThat(r.statusCode()).as(body + ": " + r.body()).isEqualTo(403);
            assertThat(code(r)).isEqualTo("exceeds_parent");
        }
        HttpResponse<String> same = api.send("POST", "/v1/executions", token,
                "{\"command\": \"true\", \"identity\": {\"audience\": \"svc\"}}");
        assertThat(same.statusCode()).as(same.body()).isEqualTo(202);
        // The owner itself is held to nothing of the kind.
        assertThat(api.send("POST", "/v1/executions", api.aliceToken,
                "{\"command\": \"true\", \"identity\": {\"audience\": \"other\"}}").statusCode()).isEqualTo(202);
        finish(run);
    }

    @Test
    void cancellingTheParentCancelsItsChildrenAndTheirs() throws Exception {
        Run parent = running("{\"command\": \"sleep 60\"}");
        UUID queuedChild = UUID.fromString(json(api.send("POST", "/v1/executions", parent.tokens().apiToken(),
                "{\"command\": \"sleep 60\"}")).path("executionId").asText());
        UUID keptChild = UUID.fromString(json(api.send("POST", "/v1/executions", parent.tokens().apiToken(),
                "{\"command\": \"sleep 60\", \"cancelWithParent\": false}")).path("executionId").asText());
        Execution runningChild = new LeaseStore(api.core().pool()).claim(queuedChild, "n/1", TTL).orElseThrow();
        RunTokens childTokens = issuer.issue(runningChild, Instant.now());
        UUID grandchild = UUID.fromString(json(api.send("POST", "/v1/executions", childTokens.apiToken(),
                "{\"command\": \"sleep 60\"}")).path("executionId").asText());
        assertThat(api.core().submissions().find(grandchild, OutputStore.Read.NONE).orElseThrow().lineage().depth())
                .isEqualTo(2);

        HttpResponse<String> cancel = api.send("POST", "/v1/executions/" + parent.id() + "/cancel", api.aliceToken, null);
        assertThat(cancel.statusCode()).as(cancel.body()).isEqualTo(202);
        Execution grand = api.core().submissions().find(grandchild, OutputStore.Read.NONE).orElseThrow();
        assertThat(grand.status()).isEqualTo(ExecutionStatus.CANCELLED);
        assertThat(grand.errorMessage()).contains("Cancelled with its parent");
        assertThat(api.core().submissions().find(queuedChild, OutputStore.Read.NONE).orElseThrow().cancelRequested())
                .as("the running child is asked to stop").isTrue();
        assertThat(api.core().submissions().find(keptChild, OutputStore.Read.NONE).orElseThrow().status())
                .isEqualTo(ExecutionStatus.QUEUED);
        api.send("POST", "/v1/executions/" + keptChild + "/cancel", api.aliceToken, null);
    }

    @Test
    void aParentThatEndsByItselfTakesItsChildrenAtTheSweep() throws Exception {
        Run parent = running("{\"command\": \"sleep 60\"}");
        UUID child = UUID.fromString(json(api.send("POST", "/v1/executions", parent.tokens().apiToken(),
                "{\"command\": \"sleep 60\"}")).path("executionId").asText());
        finish(parent);
        assertThat(api.core().submissions().find(child, OutputStore.Read.NONE).orElseThrow().status())
                .isEqualTo(ExecutionStatus.QUEUED);
        api.core().children().endOrphans();
        assertThat(api.core().submissions().find(child, OutputStore.Read.NONE).orElseThrow().status())
                .isEqualTo(ExecutionStatus.CANCELLED);
    }

    @Test
    void aRotatedKeyStillVerifiesTheTokensItSigned() throws Exception {
        Run before = running("{\"command\": \"sleep 60\", \"identity\": {\"audience\": \"svc\"}}");
        String oldKid = SignedJWT.parse(before.tokens().idToken()).getHeader().getKeyID();
        age(oldKid, "1 hour"); // a fleet's key, made long before this rotation
        SigningKeys.Rotated rotated = keys.rotate();
        assertThat(rotated.retiredKid()).isEqualTo(oldKid);
        Run after = running("{\"command\": \"sleep 60\", \"identity\": {\"audience\": \"svc\"}}");
        // For SigningKeys.SIGN_AFTER the old key still signs, until every JWKS publishes the new one.
        assertThat(SignedJWT.parse(new TokenIssuer(keys, api.base().toString()).issue(after.execution(), Instant.now())
                .idToken()).getHeader().getKeyID()).isEqualTo(oldKid);
        age(rotated.kid(), "31 seconds");
        TokenIssuer fresh = new TokenIssuer(keys, api.base().toString()); // a node whose cache has expired
        RunTokens newTokens = fresh.issue(after.execution(), Instant.now());
        assertThat(SignedJWT.parse(newTokens.idToken()).getHeader().getKeyID()).isEqualTo(rotated.kid());

        // The API node reads its keys again once its JWKS cache (10 s) is past.
        JWKSet jwks = io.outrun.testing.Await.until("both keys in the JWKS", Duration.ofSeconds(30), () -> {
            try {
                JWKSet now = JWKSet.parse(api.send("GET", "/.well-known/jwks.json", null, null).body());
                return now.getKeyByKeyId(rotated.kid()) != null ? now : null;
            } catch (java.text.ParseException e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(jwks.getKeys()).extracting(k -> k.getKeyID()).contains(oldKid, rotated.kid());
        SignedJWT old = SignedJWT.parse(before.tokens().idToken());
        assertThat(old.verify(new com.nimbusds.jose.crypto.ECDSAVerifier(jwks.getKeyByKeyId(oldKid).toECKey()))).isTrue();
        // Both keys' run tokens still open the API while their attempts run.
        assertThat(api.send("GET", "/v1/executions/" + before.id(), before.tokens().apiToken(), null).statusCode()).isEqualTo(200);
        assertThat(api.send("GET", "/v1/executions/" + after.id(), newTokens.apiToken(), null).statusCode()).isEqualTo(200);
        finish(before);
        finish(after);
    }

    /** Makes key {@code kid} as old as {@code age} (an SQL interval), instead of waiting. */
    private static void age(String kid, String age) throws Exception {
        try (var c = api.core().pool().getConnection(); var ps = c.prepareStatement(
                "UPDATE signing_keys SET created_at = now() - ?::interval WHERE kid = ?")) {
            ps.setString(1, age);
            ps.setString(2, kid);
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
    }

    private void finish(Run run) {
        Execution e = run.execution();
        new LeaseStore(api.core().pool()).finish(new Lease(e.id(), e.leaseEpoch(), e.attempt(), e.leaseHolder()),
                Outcome.withoutOutput(ExecutionStatus.SUCCEEDED, 0, null, null));
    }
}
