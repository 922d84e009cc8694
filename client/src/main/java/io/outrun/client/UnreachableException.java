package io.outrun.client;

/** No answer from the API (connection refused, reset, timed out) or an answer that is not the API's. */
public final class UnreachableException extends OutrunException {
    public UnreachableException(String message, Throwable cause) {
        super(message, cause);
    }
}
