package io.outrun.core.secrets;

/** A run's secret cannot be opened on this node: the run is refused with this message (it names no value). */
public final class SecretUnavailableException extends RuntimeException {
    public SecretUnavailableException(String message) {
        super(message);
    }
}
