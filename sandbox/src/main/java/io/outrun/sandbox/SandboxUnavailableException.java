package io.outrun.sandbox;

/** The backend cannot run anything: engine unreachable, image missing, no bash in the image. */
public class SandboxUnavailableException extends SandboxException {
    public SandboxUnavailableException(String message) {
        super(message);
    }

    public SandboxUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
