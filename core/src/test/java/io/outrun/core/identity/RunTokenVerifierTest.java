package io.outrun.core.identity;

import static org.assertj.core.api.Assertions.assertThat;

import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.ECDSASigner;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.gen.ECKeyGenerator;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** What the API takes as a run token, without a database: the keys come from a list. */
class RunTokenVerifierTest {

    private final ECKey key = generate("k1");
    private final AtomicInteger reads = new AtomicInteger();
    private final RunTokenVerifier verifier = new RunTokenVerifier(() -> {
        reads.incrementAndGet();
        return List.of(new SigningKeys.Published("k1", key.toPublicJWK(), Instant.now(), null, null));
    });
    private final UUID id = UUID.randomUUID();

    @Test
    void aRunTokenOfAPublishedKeyNamesItsRun() throws Exception {
        RunPrincipal run = verifier.verify(token(key, "at+jwt", claims().build())).orElseThrow();
        assertThat(run).isEqualTo(new RunPrincipal("alice", id, 2, 7));
    }

    @Test
    void anythingElseIsNoRunToken() throws Exception {
        assertThat(verifier.verify(token(key, "JWT", claims().build()))).as("an identity token").isEmpty();
        assertThat(verifier.verify(token(key, null, claims().build()))).as("no type").isEmpty();
        assertThat(verifier.verify(token(key, "at+jwt", claims().claim("scope", "admin").build()))).isEmpty();
        assertThat(verifier.verify(token(key, "at+jwt", claims().expirationTime(Date.from(Instant.now().minusSeconds(120)))
                .build()))).as("expired past the skew").isEmpty();
        assertThat(verifier.verify(token(key, "at+jwt", claims().subject("alice").build()))).as("no owner: prefix").isEmpty();
        assertThat(verifier.verify(token(key, "at+jwt", claims().claim("lease_epoch", null).build()))).as("no epoch").isEmpty();
        assertThat(verifier.verify(token(generate("k1"), "at+jwt", claims().build()))).as("another key, same kid").isEmpty();
        assertThat(verifier.verify(token(generate("k9"), "at+jwt", claims().build()))).as("an unknown kid").isEmpty();
        assertThat(verifier.verify("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")).as("alg none").isEmpty();
        assertThat(verifier.verify("eyJ.not.jwt")).isEmpty();
        assertThat(RunTokenVerifier.looksLikeJwt("or_abcdef")).isFalse();
    }

    @Test
    void unknownKeysDoNotMakeEveryRequestReadTheKeys() throws Exception {
        verifier.verify(token(key, "at+jwt", claims().build()));
        int before = reads.get();
        for (int i = 0; i < 20; i++) {
            verifier.verify(token(generate("k" + i + "x"), "at+jwt", claims().build()));
        }
        assertThat(reads.get() - before).as("at most one read per " + RunTokenVerifier.UNKNOWN_KID_REFRESH).isLessThanOrEqualTo(1);
    }

    private JWTClaimsSet.Builder claims() {
        return new JWTClaimsSet.Builder().issuer("http://outrun.test").subject("owner:alice").audience("http://outrun.test/v1")
                .expirationTime(Date.from(Instant.now().plusSeconds(60))).claim("execution_id", id.toString())
                .claim("attempt", 2).claim("lease_epoch", 7).claim("scope", "run");
    }

    private static String token(ECKey key, String type, JWTClaimsSet claims) throws Exception {
        JWSHeader.Builder header = new JWSHeader.Builder(JWSAlgorithm.ES256).keyID(key.getKeyID());
        if (type != null) {
            header.type(new JOSEObjectType(type));
        }
        SignedJWT jwt = new SignedJWT(header.build(), claims);
        jwt.sign(new ECDSASigner(key));
        return jwt.serialize();
    }

    private static ECKey generate(String kid) {
        try {
            return new ECKeyGenerator(Curve.P_256).keyID(kid).generate();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
