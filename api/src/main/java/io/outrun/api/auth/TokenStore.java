package io.outrun.api.auth;

import io.outrun.core.config.ConfigException;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.StoreException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The {@code api_tokens} table: bearer tokens that map to an owner. Only a SHA-256 of each
 * token is stored, so a leaked table grants nothing; the token itself is shown once, at creation.
 */
public final class TokenStore {

    private static final NamedSql INSERT = NamedSql.of("""
            INSERT INTO api_tokens (id, owner, token_hash, admin) VALUES (:id, :owner, :hash, :admin)""");
    private static final NamedSql PRINCIPAL = NamedSql.of("""
            SELECT owner, admin FROM api_tokens WHERE token_hash = :hash AND revoked_at IS NULL""");
    private static final NamedSql REVOKE = NamedSql.of("""
            UPDATE api_tokens SET revoked_at = now() WHERE token_hash = :hash AND revoked_at IS NULL""");
    private static final NamedSql REVOKE_BY_ID = NamedSql.of("""
            UPDATE api_tokens SET revoked_at = now() WHERE id = :id AND revoked_at IS NULL""");

    private final DataSource dataSource;

    public TokenStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** A token as handed out: its id (for revoking without the secret), owner and the secret. */
    public record Issued(UUID id, String owner, String token) {
        @Override
        public String toString() {
            return "Issued[id=" + id + ", owner=" + owner + "]";
        }
    }

    /** Owners are names people type and read in logs: a conservative alphabet. */
    public static String validOwner(String owner) {
        if (owner == null || !owner.matches("[A-Za-z0-9][A-Za-z0-9._@+-]{0,199}")) {
            throw new ConfigException("--owner must be 1-200 characters of A-Z a-z 0-9 . _ @ + - (starting with a letter"
                    + " or digit), got: " + owner);
        }
        return owner;
    }

    /** Who a live token acts as: an owner, and whether it may also read fleet-wide admin views. */
    public record Principal(String owner, boolean admin) {
    }

    public Issued create(String owner) {
        return create(owner, false);
    }

    /** A token for {@code owner}; an admin one may also read fleet-wide views (GET /v1/admin/...). */
    public Issued create(String owner, boolean admin) {
        validOwner(owner);
        UUID id = UUID.randomUUID();
        String token = Tokens.generate();
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = INSERT.prepare(c,
                NamedSql.Args.of("id", id, "owner", owner, "hash", Tokens.hash(token)).and("admin", admin))) {
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new StoreException("cannot store a new token for owner " + owner, e);
        }
        return new Issued(id, owner, token);
    }

    /** The owner of a live (not revoked) token. */
    public Optional<String> ownerOf(String token) {
        return principalOf(token).map(Principal::owner);
    }

    /** Who a live (not revoked) token acts as. */
    public Optional<Principal> principalOf(String token) {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = PRINCIPAL.prepare(c, NamedSql.Args.of("hash", Tokens.hash(token)))) {
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(new Principal(rs.getString(1), rs.getBoolean(2))) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new StoreException("cannot look up a token", e);
        }
    }

    /** @return true when a live token was revoked now; false when unknown or already revoked */
    public boolean revoke(String token) {
        return update(REVOKE, NamedSql.Args.of("hash", Tokens.hash(token)));
    }

    /** As {@link #revoke(String)}, by the id printed at creation. */
    public boolean revokeById(UUID id) {
        return update(REVOKE_BY_ID, NamedSql.Args.of("id", id));
    }

    private boolean update(NamedSql sql, NamedSql.Args args) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = sql.prepare(c, args)) {
            return ps.executeUpdate() == 1;
        } catch (SQLException e) {
            throw new StoreException("cannot revoke a token", e);
        }
    }
}
