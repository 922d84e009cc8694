package io.outrun.core.secrets;

import io.outrun.core.store.NamedSql;
import io.outrun.core.store.StoreException;
import io.outrun.core.store.Transaction;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The {@code secrets} table (V17): each owner's named values, sealed with the operator's key.
 * Every statement is scoped to its owner; values leave this class only from {@link #open}, on the
 * node that runs the command that named them.
 */
public final class SecretStore {

    /** One put at a time per owner, so that two at the limit cannot both pass the count. */
    private static final NamedSql LOCK_OWNER = NamedSql.of("SELECT pg_advisory_xact_lock(hashtext('outrun-secrets:' || :owner))");
    private static final NamedSql PUT = NamedSql.of("""
            INSERT INTO secrets (owner, name, nonce, ciphertext, key_id)
            SELECT :owner, :name, :nonce, :ciphertext, :key_id
             WHERE (SELECT count(*) FROM secrets WHERE owner = :owner AND name <> :name) < :max
            ON CONFLICT (owner, name) DO UPDATE SET nonce = excluded.nonce, ciphertext = excluded.ciphertext,
              key_id = excluded.key_id, updated_at = now()
            RETURNING (xmax = 0) AS created, created_at, updated_at""");
    private static final NamedSql LIST = NamedSql.of("SELECT name, created_at, updated_at FROM secrets WHERE owner = :owner ORDER BY name");
    private static final NamedSql DELETE = NamedSql.of("DELETE FROM secrets WHERE owner = :owner AND name = :name");
    /** GCM adds a 16-byte tag to the value's bytes. */
    private static final NamedSql CHECK = NamedSql.of("""
            SELECT w.n, octet_length(s.ciphertext) - 16 FROM unnest(:names::text[]) WITH ORDINALITY AS w(n, i)
              LEFT JOIN secrets s ON s.owner = :owner AND s.name = w.n ORDER BY w.i""");
    private static final NamedSql OPEN = NamedSql.of("""
            SELECT name, nonce, ciphertext, key_id FROM secrets WHERE owner = :owner AND name = ANY (:names)""");

    private final DataSource dataSource;
    /** The operator's key; null when none is configured (secrets can be listed and deleted, not set or opened). */
    private final SecretsKey key;

    public SecretStore(DataSource dataSource, SecretsKey key) {
        this.dataSource = dataSource;
        this.key = key;
    }

    public boolean hasKey() {
        return key != null;
    }

    /** A secret as listed: its name and times, never its value. */
    public record Listed(String name, Instant createdAt, Instant updatedAt) {
    }

    /** What {@link #put} did, and the secret as stored now ({@code secret} null when refused). */
    public record Put(Outcome outcome, Listed secret) {
    }

    public enum Outcome { CREATED, UPDATED, TOO_MANY }

    /**
     * Sets {@code owner}'s secret {@code name} to {@code value}, sealed; refused ({@link Outcome#TOO_MANY})
     * when the owner already keeps {@link SecretName#MAX_PER_OWNER} others. An owner's puts take
     * turns (a transaction lock on the owner), so two at the limit cannot both pass the count.
     */
    public Put put(String owner, String name, String value) {
        if (key == null) {
            throw new IllegalStateException("no secrets key");
        }
        SecretsKey.Sealed sealed = key.seal(owner, name, value);
        try (Connection c = dataSource.getConnection()) {
            return Transaction.on(c, tx -> {
                try (PreparedStatement lock = LOCK_OWNER.prepare(tx, NamedSql.Args.of("owner", owner))) {
                    lock.execute();
                }
                NamedSql.Args args = NamedSql.Args.of("owner", owner, "name", name, "nonce", sealed.nonce())
                        .and("ciphertext", sealed.ciphertext())
                        .and("key_id", sealed.keyId())
                        .and("max", SecretName.MAX_PER_OWNER);
                try (PreparedStatement ps = PUT.prepare(tx, args)) {
                    try (ResultSet rs = ps.executeQuery()) {
                        return Transaction.Result.commit(!rs.next() ? new Put(Outcome.TOO_MANY, null)
                                : new Put(rs.getBoolean(1) ? Outcome.CREATED : Outcome.UPDATED,
                                        new Listed(name, rs.getTimestamp(2).toInstant(), rs.getTimestamp(3).toInstant())));
                    }
                }
            });
        } catch (SQLException e) {
            throw new StoreException("cannot store secret " + name + " of " + owner, e);
        }
    }

    public List<Listed> list(String owner) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = LIST.prepare(c, NamedSql.Args.of("owner", owner))) {
            List<Listed> all = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    all.add(new Listed(rs.getString(1), rs.getTimestamp(2).toInstant(), rs.getTimestamp(3).toInstant()));
                }
            }
            return all;
        } catch (SQLException e) {
            throw new StoreException("cannot list the secrets of " + owner, e);
        }
    }

    public Optional<Listed> find(String owner, String name) {
        return list(owner).stream().filter(l -> l.name().equals(name)).findFirst();
    }

    /** @return true when it existed */
    public boolean delete(String owner, String name) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = DELETE.prepare(c,
                NamedSql.Args.of("owner", owner, "name", name))) {
            return ps.executeUpdate() > 0;
        } catch (SQLException e) {
            throw new StoreException("cannot delete secret " + name + " of " + owner, e);
        }
    }

    /** Which of the names a run asks for its owner has no secret called, and how many bytes the others hold. */
    public record Check(List<String> missing, long bytes) {
    }

    /** {@code owner}'s secrets {@code names}, checked for a submission: the missing ones (in the order given), the size of the rest. */
    public Check check(String owner, List<String> names) {
        if (names.isEmpty()) {
            return new Check(List.of(), 0);
        }
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = CHECK.prepare(c,
                NamedSql.Args.of("names", c.createArrayOf("text", names.toArray()), "owner", owner))) {
            List<String> missing = new ArrayList<>();
            long bytes = 0;
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (rs.getObject(2) == null) {
                        missing.add(rs.getString(1));
                    } else {
                        bytes += rs.getLong(2);
                    }
                }
            }
            return new Check(missing, bytes);
        } catch (SQLException e) {
            throw new StoreException("cannot check the secrets of " + owner, e);
        }
    }

    /** Which of {@code names} {@code owner} has no secret called, in the order given. */
    public List<String> missing(String owner, List<String> names) {
        return check(owner, names).missing();
    }

    /**
     * The values of {@code owner}'s secrets {@code names}, opened with this node's key, by name in
     * the order given: for the run that named them, and nothing else.
     *
     * @throws SecretUnavailableException when one is gone, this node has no key, or another key sealed it
     */
    public Map<String, String> open(String owner, List<String> names) {
        Map<String, String> values = new LinkedHashMap<>();
        if (names.isEmpty()) {
            return values;
        }
        if (key == null) {
            throw new SecretUnavailableException("this worker has no secrets key, so it cannot open the secrets the"
                    + " execution names (" + String.join(", ", names) + "); the operator starts every worker with the"
                    + " API's --secrets-key-file (or OUTRUN_SECRETS_KEY)");
        }
        Map<String, SecretsKey.Sealed> sealed = new LinkedHashMap<>();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = OPEN.prepare(c,
                NamedSql.Args.of("owner", owner, "names", c.createArrayOf("text", names.toArray())))) {
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    sealed.put(rs.getString(1), new SecretsKey.Sealed(rs.getBytes(2), rs.getBytes(3), rs.getString(4)));
                }
            }
        } catch (SQLException e) {
            throw new StoreException("cannot read the secrets of " + owner, e);
        }
        for (String name : names) {
            SecretsKey.Sealed s = sealed.get(name);
            if (s == null) {
                throw new SecretUnavailableException("the secret " + name + " the execution names no longer exists (it was"
                        + " deleted after the submission); set it again (PUT /v1/secrets/" + name + ") and resubmit");
            }
            String value = key.open(owner, name, s).orElseThrow(() -> new SecretUnavailableException(
                    s.keyId().equals(key.id())
                            ? "the secret " + name + " does not open under this worker's key (its stored row was altered or"
                                    + " copied from another owner or name); set it again"
                            : "the secret " + name + " was sealed with another key (" + s.keyId() + ") than this worker's ("
                                    + key.id() + "); the operator gives every API node and worker the same"
                                    + " --secrets-key-file, or the secret is set again"));
            values.put(name, value);
        }
        long bytes = values.values().stream().mapToLong(v -> v.getBytes(StandardCharsets.UTF_8).length).sum();
        if (bytes > SecretName.MAX_RUN_BYTES) {
            throw new SecretUnavailableException("the secrets the execution names hold " + bytes + " bytes together (they"
                    + " were changed after the submission); a run gets at most " + SecretName.MAX_RUN_BYTES);
        }
        return values;
    }
}
