package io.outrun.sandbox.docker;

import com.github.dockerjava.api.model.WaitResponse;

/**
 * Receives the answer of the engine's wait call: the container's exit code once it stops.
 * The stream may also end without a code (engine restarted, connection lost); the run then asks
 * the engine directly.
 */
final class ExitCallback extends StreamCallback<WaitResponse> {

    private volatile Integer statusCode;

    ExitCallback() {
        super("wait");
    }

    @Override
    public void onNext(WaitResponse response) {
        statusCode = response.getStatusCode();
    }

    /** The exit code, or null when the stream ended without one. */
    Integer statusCode() {
        return statusCode;
    }
}
