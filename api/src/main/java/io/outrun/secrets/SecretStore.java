package io.outrun.secrets;

import io.outrun.store.StoreException;
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

    /** What {@link #put} did. */
    public enum Put { CREATED, UPDATED, TOO_MANY }

    /**
     * Sets {@code owner}'s secret {@code name} to {@code value}, sealed; refused ({@link Put#TOO_MANY})
     * when the owner already keeps {@link SecretName#MAX_PER_OWNER} others.
     */
    public Put put(String owner, String name, String value) {
        if (key == null) {
            throw new IllegalStateException("no secrets key");
        }
        SecretsKey.Sealed sealed = key.seal(owner, name, value);
        // One statement: the count and the write see the same rows (two concurrent puts of new
        // names may both pass at the limit: the bound is a guard against abuse, not an invariant).
        String sql = """
                INSERT INTO secrets (owner, name, nonce, ciphertext, key_id)
                SELECT ?, ?, ?, ?, ? WHERE (SELECT count(*) FROM secrets WHERE owner = ? AND name <> ?) < ?
                ON CONFLICT (owner, name) DO UPDATE SET nonce = excluded.nonce, ciphertext = excluded.ciphertext,
                  key_id = excluded.key_id, updated_at = now()
                RETURNING (xmax = 0) AS created""";
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, owner);
            ps.setString(2, name);
            ps.setBytes(3, sealed.nonce());
            ps.setBytes(4, sealed.ciphertext());
            ps.setString(5, sealed.keyId());
            ps.setString(6, owner);
            ps.setString(7, name);
            ps.setInt(8, SecretName.MAX_PER_OWNER);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Put.TOO_MANY;
                }
                return rs.getBoolean(1) ? Put.CREATED : Put.UPDATED;
            }
        } catch (SQLException e) {
            throw new StoreException("cannot store secret " + name + " of " + owner, e);
        }
    }

    public List<Listed> list(String owner) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT name, created_at, updated_at FROM secrets WHERE owner = ? ORDER BY name")) {
            ps.setString(1, owner);
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
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "DELETE FROM secrets WHERE owner = ? AND name = ?")) {
            ps.setString(1, owner);
            ps.setString(2, name);
            return ps.executeUpdate() > 0;
        } catch (SQLException e) {
            throw new StoreException("cannot delete secret " + name + " of " + owner, e);
        }
    }

    /** Which of {@code names} {@code owner} has no secret called, in the order given. */
    public List<String> missing(String owner, List<String> names) {
        if (names.isEmpty()) {
            return List.of();
        }
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT n FROM unnest(?::text[]) WITH ORDINALITY AS w(n, i)"
                        + " WHERE NOT EXISTS (SELECT 1 FROM secrets s WHERE s.owner = ? AND s.name = w.n) ORDER BY i")) {
            ps.setArray(1, c.createArrayOf("text", names.toArray()));
            ps.setString(2, owner);
            List<String> missing = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    missing.add(rs.getString(1));
                }
            }
            return missing;
        } catch (SQLException e) {
            throw new StoreException("cannot check the secrets of " + owner, e);
        }
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
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT name, nonce, ciphertext, key_id FROM secrets WHERE owner = ? AND name = ANY (?)")) {
            ps.setString(1, owner);
            ps.setArray(2, c.createArrayOf("text", names.toArray()));
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
            String value = key.open(owner, name, s).orElseThrow(() -> new SecretUnavailableException("the secret " + name
                    + " was sealed with another key (" + s.keyId() + ") than this worker's (" + key.id() + "); the"
                    + " operator gives every API node and worker the same --secrets-key-file, or the secret is set again"));
            values.put(name, value);
        }
        return values;
    }
}
