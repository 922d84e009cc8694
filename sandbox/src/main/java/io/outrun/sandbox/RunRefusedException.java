package io.outrun.sandbox;

/**
 * The sandbox refuses this run as specified (the engine rejected its container, its workdir
 * cannot exist there, its environment is malformed): every retry would be refused alike, so the
 * execution fails with the reason instead of being handed back.
 */
public class RunRefusedException extends RuntimeException {

    public RunRefusedException(String message, Throwable cause) {
        super(message, cause);
    }

    public RunRefusedException(String message) {
        super(message);
    }
}
