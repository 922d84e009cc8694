package io.outrun.core.identity;

/** A node cannot sign this run's tokens (no secrets key, or the current key sealed under another). */
public final class IdentityUnavailableException extends RuntimeException {

    public IdentityUnavailableException(String message) {
        super(message);
    }
}
