package io.outrun.api.http;

import com.nimbusds.jose.jwk.JWK;
import com.nimbusds.jose.jwk.JWKSet;
import io.javalin.http.Context;
import io.outrun.core.identity.SigningKeys;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The fleet's public keys and its OpenID discovery document (issue 31), so that any service can
 * check a run's identity token with a stock JWT library: {@code GET /.well-known/jwks.json} and
 * {@code GET /.well-known/openid-configuration}. No token needed; keys are read at most once a
 * {@link #CACHE_MS} per node (a rotation's new key is published within it, and the key it
 * replaces stays published far longer).
 */
final class IdentityRoutes {

    static final long CACHE_MS = 10_000;

    private final SigningKeys keys;
    private final Supplier<String> issuer;
    private volatile byte[] jwks;
    private volatile long jwksAt;

    IdentityRoutes(SigningKeys keys, Supplier<String> issuer) {
        this.keys = keys;
        this.issuer = issuer;
    }

    void jwks(Context ctx) {
        long now = System.nanoTime();
        byte[] body = jwks;
        boolean none = false;
        if (body == null || now - jwksAt > CACHE_MS * 1_000_000L) {
            List<JWK> published = keys.published().stream().map(p -> (JWK) p.publicKey()).toList();
            body = new JWKSet(published).toString(true).getBytes(StandardCharsets.UTF_8);
            // No key yet (a new fleet's first is made by the first run to start): kept neither
            // here nor by the caller, so that run's token verifies as soon as it is signed.
            none = published.isEmpty();
            if (!none) {
                jwks = body;
                jwksAt = now;
            }
        }
        ctx.status(200).contentType("application/jwk-set+json")
                .header("Cache-Control", none ? "no-store" : "public, max-age=60").result(body);
    }

    void discovery(Context ctx) {
        String iss = issuer.get();
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("issuer", iss);
        doc.put("jwks_uri", iss + "/.well-known/jwks.json");
        doc.put("response_types_supported", List.of("id_token"));
        doc.put("subject_types_supported", List.of("public"));
        doc.put("id_token_signing_alg_values_supported", List.of("ES256"));
        doc.put("claims_supported", List.of("iss", "sub", "aud", "exp", "iat", "nbf", "jti", "execution_id", "attempt",
                "labels"));
        ctx.header("Cache-Control", "public, max-age=300");
        ApiServer.json(ctx, 200, doc);
    }
}
