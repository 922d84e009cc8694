package io.outrun.core.identity;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.ECDSASigner;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import io.outrun.core.execution.Execution;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.Optional;
import java.util.UUID;

/**
 * Signs the tokens of each attempt on the worker that runs it ({@link RunTokens}). The current
 * key is read once and kept for {@link #KEY_REFRESH} (a rotation reaches every node within it;
 * the key it replaces stays published meanwhile), so an attempt costs no statement.
 *
 * <p>Both tokens name the run: {@code sub} {@code owner:<owner>}, {@code execution_id},
 * {@code attempt}; they expire at the run's deadline (its start plus its timeout), capped at
 * {@link SigningKeys#MAX_TOKEN_LIFETIME}. The run token's audience is {@link #apiAudience} (this
 * fleet's API); Outrun's API takes only tokens of type {@value #RUN_TOKEN_TYPE}, so an identity
 * token handed to another service cannot be replayed against Outrun.
 */
public final class TokenIssuer {

    /** The JOSE {@code typ} of run tokens (RFC 9068's access-token type). */
    public static final String RUN_TOKEN_TYPE = "at+jwt";
    static final Duration KEY_REFRESH = Duration.ofSeconds(60);
    /**
     * The run token's claim naming the claim (lease epoch) of its attempt: an attempt handed back
     * keeps its number for its re-run, but never its epoch.
     */
    public static final String LEASE_EPOCH = "lease_epoch";

    private final SigningKeys keys;
    private final String issuer;
    private volatile ECKey cached;
    private volatile long cachedUntil;

    /**
     * @param keys   the fleet's keys, with this node's secrets key (null: this node signs nothing)
     * @param issuer the API's public URL ({@code --public-url}): the tokens' {@code iss}
     */
    public TokenIssuer(SigningKeys keys, String issuer) {
        this.keys = keys;
        this.issuer = Issuer.normalize(issuer);
    }

    public String issuer() {
        return issuer;
    }

    /** The {@code aud} of run tokens: this fleet's API. */
    public static String apiAudience(String issuer) {
        return Issuer.normalize(issuer) + "/v1";
    }

    /**
     * The tokens of {@code e}'s current attempt, which started at {@code start} and may run
     * {@code e.timeoutMs()}.
     *
     * @throws IdentityUnavailableException when this node cannot sign
     */
    public RunTokens issue(Execution e, Instant start) {
        ECKey key = key();
        Instant deadline = start.plusMillis(e.timeoutMs());
        Instant cap = start.plus(SigningKeys.MAX_TOKEN_LIFETIME);
        Instant exp = deadline.isBefore(cap) ? deadline : cap;
        // JWT times are whole seconds: round the expiry down, never past the deadline.
        Date iat = Date.from(Instant.ofEpochSecond(start.getEpochSecond()));
        Date expires = Date.from(Instant.ofEpochSecond(Math.max(exp.getEpochSecond(), start.getEpochSecond() + 1)));
        JWTClaimsSet common = new JWTClaimsSet.Builder()
                .issuer(issuer)
                .subject("owner:" + e.owner())
                .issueTime(iat)
                .notBeforeTime(iat)
                .expirationTime(expires)
                .claim("execution_id", e.id().toString())
                .claim("attempt", e.attempt())
                .build();
        String api = sign(key, RUN_TOKEN_TYPE, new JWTClaimsSet.Builder(common).audience(apiAudience(issuer))
                .jwtID(UUID.randomUUID().toString()).claim("scope", "run").claim(LEASE_EPOCH, e.leaseEpoch()).build());
        String id = null;
        if (e.identityAudience() != null) {
            id = sign(key, "JWT", new JWTClaimsSet.Builder(common).audience(e.identityAudience()).jwtID(UUID.randomUUID().toString())
                    .claim("labels", e.labels()).build());
        }
        return new RunTokens(api, id);
    }

    private ECKey key() {
        ECKey key = cached;
        if (key != null && cachedUntil - System.nanoTime() > 0) {
            return key;
        }
        if (!keys.canSign()) {
            throw new IdentityUnavailableException("this node has no secrets key (--secrets-key-file), which seals the"
                    + " fleet's signing key: it cannot sign run tokens");
        }
        Optional<ECKey> current = keys.current();
        if (current.isEmpty()) {
            throw new IdentityUnavailableException("the fleet's signing key is sealed under another secrets key than"
                    + " this node's: give every node the same --secrets-key-file");
        }
        cached = current.get();
        cachedUntil = System.nanoTime() + KEY_REFRESH.toNanos();
        return cached;
    }

    private static String sign(ECKey key, String type, JWTClaimsSet claims) {
        SignedJWT jwt = new SignedJWT(new JWSHeader.Builder(JWSAlgorithm.ES256).keyID(key.getKeyID())
                .type(new JOSEObjectType(type)).build(), claims);
        try {
            jwt.sign(new ECDSASigner(key));
        } catch (JOSEException ex) {
            throw new IllegalStateException("cannot sign with " + key.getKeyID(), ex);
        }
        return jwt.serialize();
    }
}
