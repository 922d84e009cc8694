package io.outrun.sandbox;

/** Root of the sandbox module's errors: a run could not be started or managed. */
public class SandboxException extends RuntimeException {
    public SandboxException(String message) {
        super(message);
    }

    public SandboxException(String message, Throwable cause) {
        super(message, cause);
    }
}
