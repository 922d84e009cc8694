package io.outrun.worker.dev;

/**
 * {@code outrun dev} cannot use its data directory (another live {@code outrun dev} holds it, or
 * a PostgreSQL left there cannot be stopped). The message is one complete line for the user;
 * the command line prints it without a stack trace.
 */
public final class DevDirException extends RuntimeException {

    public DevDirException(String message) {
        super(message);
    }

    public DevDirException(String message, Throwable cause) {
        super(message, cause);
    }
}
