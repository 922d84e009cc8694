package io.outrun.core.identity;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.KeyUse;
import com.nimbusds.jose.jwk.gen.ECKeyGenerator;
import io.outrun.core.secrets.SecretsKey;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.StoreException;
import io.outrun.core.store.Transaction;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.text.ParseException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The {@code signing_keys} table (V23): the fleet's keys for run tokens. Each is an ES256 (P-256)
 * key pair; the private half is sealed under the operator's secrets key, so a database dump alone
 * signs nothing. One key is current; {@link #rotate} retires it and keeps it published for
 * {@link #OVERLAP}, the longest a token it signed can live, so tokens issued before a rotation
 * still verify until they expire.
 */
public final class SigningKeys {

    /** The longest a run token lives (its run's deadline, capped), and so how long a retired key stays published. */
    public static final Duration MAX_TOKEN_LIFETIME = Duration.ofHours(24);
    /** A new key signs once it has been published this long (see CURRENT). */
    public static final Duration SIGN_AFTER = Duration.ofSeconds(30);
    /** A retired key is published this long: every token it signed has expired by then (clocks a few minutes apart). */
    public static final Duration OVERLAP = MAX_TOKEN_LIFETIME.plusMinutes(5);
    /** What a sealed private key is sealed as (the AES-GCM associated data names the key). */
    private static final String SEAL_OWNER = "outrun:signing-key";

    /**
     * The key to sign with: the newest published for {@link #SIGN_AFTER} at least, so that every
     * API node's JWKS (cached {@code IdentityRoutes.CACHE_MS}) and every verifier (which reads
     * again on an unknown kid, at most every few seconds) has it before a token names it; the
     * newest of all when none is that old (the fleet's first key). Right after a rotation this is
     * the key just retired, which stays published for a day.
     */
    private static final NamedSql CURRENT = NamedSql.of("""
            SELECT kid, public_jwk, private_nonce, private_sealed, sealed_key_id, created_at
              FROM signing_keys WHERE published_until IS NULL OR published_until > now() + interval '1 hour'
             ORDER BY (created_at <= now() - make_interval(secs => :sign_after_s)) DESC, created_at DESC LIMIT 1""");
    private static final NamedSql PUBLISHED = NamedSql.of("""
            SELECT kid, public_jwk, created_at, retired_at, published_until FROM signing_keys
             WHERE published_until IS NULL OR published_until > now() ORDER BY created_at DESC""");
    private static final NamedSql LISTED = NamedSql.of("""
            SELECT kid, public_jwk, created_at, retired_at, published_until FROM signing_keys ORDER BY created_at DESC""");
    /** The first key: none is current yet (the unique index keeps a racing second one out). */
    private static final NamedSql INSERT_FIRST = NamedSql.of("""
            INSERT INTO signing_keys (kid, alg, public_jwk, private_nonce, private_sealed, sealed_key_id)
            VALUES (:kid, 'ES256', :public_jwk, :nonce, :sealed, :key_id)
            ON CONFLICT DO NOTHING""");
    private static final NamedSql RETIRE_CURRENT = NamedSql.of("""
            UPDATE signing_keys SET retired_at = now(), published_until = now() + make_interval(secs => :overlap_s)
             WHERE retired_at IS NULL RETURNING kid""");
    private static final NamedSql INSERT = NamedSql.of("""
            INSERT INTO signing_keys (kid, alg, public_jwk, private_nonce, private_sealed, sealed_key_id)
            VALUES (:kid, 'ES256', :public_jwk, :nonce, :sealed, :key_id)""");
    private static final NamedSql LOCK = NamedSql.of("SELECT pg_advisory_xact_lock(hashtext('outrun-signing-keys'))");

    private final DataSource dataSource;
    /** Null on a node without the secrets key: it can publish and verify, not sign. */
    private final SecretsKey sealKey;

    public SigningKeys(DataSource dataSource, SecretsKey sealKey) {
        this.dataSource = dataSource;
        this.sealKey = sealKey;
    }

    public boolean canSign() {
        return sealKey != null;
    }

    /** A published key: its public JWK and its times (retiredAt and publishedUntil null while current). */
    public record Published(String kid, ECKey publicKey, Instant createdAt, Instant retiredAt, Instant publishedUntil) {
    }

    /** Every key a token may still be verified with, newest first. */
    public List<Published> published() {
        return read(PUBLISHED, "cannot read the published signing keys");
    }

    /** Every key there is, retired long ago or not, newest first ({@code outrun keys ls}). */
    public List<Published> all() {
        return read(LISTED, "cannot list the signing keys");
    }

    private List<Published> read(NamedSql sql, String what) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = sql.prepare(c, NamedSql.Args.of());
             ResultSet rs = ps.executeQuery()) {
            List<Published> keys = new ArrayList<>();
            while (rs.next()) {
                keys.add(new Published(rs.getString(1), ECKey.parse(rs.getString(2)), rs.getTimestamp(3).toInstant(),
                        instant(rs, 4), instant(rs, 5)));
            }
            return keys;
        } catch (SQLException e) {
            throw new StoreException(what, e);
        } catch (ParseException e) {
            throw new IllegalStateException("a stored signing key is not a JWK: " + e.getMessage(), e);
        }
    }

    /**
     * The key to sign with (see {@link #CURRENT}) with its private half, the fleet's first made
     * (and stored) when there is none yet; empty when it is sealed under another secrets key than
     * this node's.
     */
    public Optional<ECKey> current() {
        requireSealKey();
        try (Connection c = dataSource.getConnection()) {
            Optional<ECKey> found = readCurrent(c);
            if (found != null) {
                return found;
            }
            // None yet: the first node to need one makes it; a racing node's insert is a no-op.
            insert(c, INSERT_FIRST, generate());
            found = readCurrent(c);
            if (found == null) {
                throw new IllegalStateException("no current signing key after making one");
            }
            return found;
        } catch (SQLException e) {
            throw new StoreException("cannot read the current signing key", e);
        }
    }

    /** Null when there is no current key; empty when it does not open under this node's key. */
    private Optional<ECKey> readCurrent(Connection c) throws SQLException {
        try (PreparedStatement ps = CURRENT.prepare(c, NamedSql.Args.of("sign_after_s", (double) SIGN_AFTER.toSeconds()));
             ResultSet rs = ps.executeQuery()) {
            if (!rs.next()) {
                return null;
            }
            String kid = rs.getString(1);
            Optional<String> privateJwk = sealKey.open(SEAL_OWNER, kid,
                    new SecretsKey.Sealed(rs.getBytes(3), rs.getBytes(4), rs.getString(5)));
            if (privateJwk.isEmpty()) {
                return Optional.empty();
            }
            try {
                return Optional.of(ECKey.parse(privateJwk.get()));
            } catch (ParseException e) {
                throw new IllegalStateException("signing key " + kid + " does not parse: " + e.getMessage(), e);
            }
        }
    }

    /**
     * Makes a new current key; the one it replaces stays published for {@link #OVERLAP}.
     *
     * @return the new key's id, and the retired one's (null when there was none)
     */
    public Rotated rotate() {
        requireSealKey();
        ECKey next = generate();
        try (Connection c = dataSource.getConnection()) {
            return Transaction.on(c, tx -> {
                try (PreparedStatement lock = LOCK.prepare(tx, NamedSql.Args.of())) {
                    lock.execute();
                }
                String retired = null;
                try (PreparedStatement ps = RETIRE_CURRENT.prepare(tx, NamedSql.Args.of("overlap_s", (double) OVERLAP.toSeconds()));
                     ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        retired = rs.getString(1);
                    }
                }
                insert(tx, INSERT, next);
                return Transaction.Result.commit(new Rotated(next.getKeyID(), retired));
            });
        } catch (SQLException e) {
            throw new StoreException("cannot rotate the signing key", e);
        }
    }

    public record Rotated(String kid, String retiredKid) {
    }

    private void insert(Connection c, NamedSql sql, ECKey key) throws SQLException {
        SecretsKey.Sealed sealed = sealKey.seal(SEAL_OWNER, key.getKeyID(), key.toJSONString());
        try (PreparedStatement ps = sql.prepare(c, NamedSql.Args.of("kid", key.getKeyID(),
                "public_jwk", key.toPublicJWK().toJSONString(), "nonce", sealed.nonce())
                .and("sealed", sealed.ciphertext()).and("key_id", sealed.keyId()))) {
            ps.executeUpdate();
        }
    }

    private static ECKey generate() {
        try {
            return new ECKeyGenerator(Curve.P_256).keyUse(KeyUse.SIGNATURE).algorithm(JWSAlgorithm.ES256)
                    .keyIDFromThumbprint(true).generate();
        } catch (JOSEException e) {
            throw new IllegalStateException("P-256 keys are required of every JVM", e);
        }
    }

    private void requireSealKey() {
        if (sealKey == null) {
            throw new IllegalStateException("no secrets key: this node cannot sign");
        }
    }

    private static Instant instant(ResultSet rs, int column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }
}
