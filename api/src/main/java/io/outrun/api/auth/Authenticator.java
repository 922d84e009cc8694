package io.outrun.api.auth;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Turns an {@code Authorization} header into an owner. Answers (found or not) are cached for a
 * short time so that polls, several per second per caller, do not each cost a query; the cache
 * is why a revocation takes up to {@link #DEFAULT_TTL} to bite.
 */
public final class Authenticator {

    /** How long a lookup is trusted: revocation takes effect within this. */
    public static final Duration DEFAULT_TTL = Duration.ofSeconds(2);
    private static final int MAX_ENTRIES = 10_000;
    private static final int MAX_TOKEN_LENGTH = 200;

    private final TokenStore tokens;
    private final long ttlNanos;
    private final Map<String, Entry> cache = new ConcurrentHashMap<>();

    private record Entry(Optional<TokenStore.Principal> principal, long expiresAt) {
    }

    public Authenticator(TokenStore tokens, Duration ttl) {
        this.tokens = tokens;
        this.ttlNanos = ttl.toNanos();
    }

    public Authenticator(TokenStore tokens) {
        this(tokens, DEFAULT_TTL);
    }

    /** The owner behind {@code Authorization: Bearer <token>}; empty for a missing, malformed, unknown or revoked token. */
    public Optional<String> owner(String authorizationHeader) {
        return principal(authorizationHeader).map(TokenStore.Principal::owner);
    }

    /** Who {@code Authorization: Bearer <token>} acts as; empty for a missing, malformed, unknown or revoked token. */
    public Optional<TokenStore.Principal> principal(String authorizationHeader) {
        String token = bearer(authorizationHeader);
        if (token == null) {
            return Optional.empty();
        }
        long now = System.nanoTime();
        Entry hit = cache.get(token);
        if (hit != null && hit.expiresAt - now > 0) {
            return hit.principal;
        }
        Optional<TokenStore.Principal> principal = tokens.principalOf(token);
        if (cache.size() >= MAX_ENTRIES) {
            // A flood of random tokens must not grow memory; a reset costs one query per caller.
            cache.clear();
        }
        cache.put(token, new Entry(principal, now + ttlNanos));
        return principal;
    }

    static String bearer(String header) {
        if (header == null) {
            return null;
        }
        String h = header.strip();
        if (h.length() < 8 || !h.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return null;
        }
        String token = h.substring(7).strip();
        if (token.isEmpty() || token.length() > MAX_TOKEN_LENGTH) {
            return null;
        }
        return token;
    }
}
