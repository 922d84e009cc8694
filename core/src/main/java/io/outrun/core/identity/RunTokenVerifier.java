package io.outrun.core.identity;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.crypto.ECDSAVerifier;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import java.text.ParseException;
import java.time.Duration;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * Checks a run token offered to Outrun's own API: an ES256 JWT of type
 * {@value TokenIssuer#RUN_TOKEN_TYPE} with scope {@code run}, signed by a published key of the
 * fleet, not expired. Whether its attempt still runs is the caller's next question (one read of
 * the row, {@code RunScope}); an identity token (type {@code JWT}) is never taken, so one handed
 * to another service cannot be replayed here.
 *
 * <p>Published keys are read at most every {@link #REFRESH}, and again (at most every
 * {@link #UNKNOWN_KID_REFRESH}) when a token names a key not seen yet (one made by a rotation).
 */
public final class RunTokenVerifier {

    static final Duration REFRESH = Duration.ofSeconds(60);
    static final Duration UNKNOWN_KID_REFRESH = Duration.ofSeconds(5);
    /** Clocks of the nodes and the database may differ by this much. */
    static final long SKEW_MS = 60_000;
    private static final JOSEObjectType RUN_TYPE = new JOSEObjectType(TokenIssuer.RUN_TOKEN_TYPE);

    private final Supplier<List<SigningKeys.Published>> published;
    private volatile Map<String, ECKey> keys = Map.of();
    private volatile long readAt;
    private volatile boolean read;

    public RunTokenVerifier(SigningKeys keys) {
        this(keys::published);
    }

    RunTokenVerifier(Supplier<List<SigningKeys.Published>> published) {
        this.published = published;
    }

    /** Whether {@code token} has the shape of a JWT (rather than an owner's opaque token). */
    public static boolean looksLikeJwt(String token) {
        return token.startsWith("eyJ") && token.chars().filter(c -> c == '.').count() == 2;
    }

    /** The run {@code token} speaks for; empty when it is not a valid, unexpired run token of this fleet. */
    public Optional<RunPrincipal> verify(String token) {
        SignedJWT jwt;
        try {
            jwt = SignedJWT.parse(token);
        } catch (ParseException e) {
            return Optional.empty();
        }
        if (!JWSAlgorithm.ES256.equals(jwt.getHeader().getAlgorithm()) || !RUN_TYPE.equals(jwt.getHeader().getType())
                || jwt.getHeader().getKeyID() == null) {
            return Optional.empty();
        }
        ECKey key = key(jwt.getHeader().getKeyID());
        if (key == null) {
            return Optional.empty();
        }
        try {
            if (!jwt.verify(new ECDSAVerifier(key))) {
                return Optional.empty();
            }
            JWTClaimsSet claims = jwt.getJWTClaimsSet();
            Date exp = claims.getExpirationTime();
            long now = System.currentTimeMillis();
            if (exp == null || exp.getTime() + SKEW_MS < now || !"run".equals(claims.getStringClaim("scope"))) {
                return Optional.empty();
            }
            String subject = claims.getSubject();
            String execution = claims.getStringClaim("execution_id");
            Long attempt = claims.getLongClaim("attempt");
            Long epoch = claims.getLongClaim(TokenIssuer.LEASE_EPOCH);
            if (subject == null || !subject.startsWith("owner:") || execution == null || attempt == null || epoch == null) {
                return Optional.empty();
            }
            return Optional.of(new RunPrincipal(subject.substring("owner:".length()), UUID.fromString(execution),
                    attempt.intValue(), epoch));
        } catch (JOSEException | ParseException | IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    private ECKey key(String kid) {
        long now = System.nanoTime();
        if (!read || now - readAt > REFRESH.toNanos()) {
            reload(now);
        }
        ECKey key = keys.get(kid);
        if (key == null && now - readAt > UNKNOWN_KID_REFRESH.toNanos()) {
            reload(now);
            key = keys.get(kid);
        }
        return key;
    }

    private synchronized void reload(long now) {
        keys = published.get().stream().collect(Collectors.toUnmodifiableMap(SigningKeys.Published::kid,
                SigningKeys.Published::publicKey));
        readAt = now;
        read = true;
    }
}
