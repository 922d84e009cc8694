package io.outrun.sandbox.docker;

import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.WaitResponse;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Receives the answer of the engine's wait call: the container's exit code once it stops.
 * The stream may also end without a code (engine restarted, connection lost); the run then asks
 * the engine directly.
 */
final class ExitCallback extends ResultCallback.Adapter<WaitResponse> {

    private static final Logger log = LoggerFactory.getLogger(ExitCallback.class);

    private final CountDownLatch ended = new CountDownLatch(1);
    private volatile Integer statusCode;

    @Override
    public void onNext(WaitResponse response) {
        statusCode = response.getStatusCode();
    }

    @Override
    public void onError(Throwable error) {
        log.debug("wait stream ended with an error", error);
        ended.countDown();
        super.onError(error);
    }

    @Override
    public void onComplete() {
        ended.countDown();
        super.onComplete();
    }

    boolean await(long timeout, TimeUnit unit) throws InterruptedException {
        return ended.await(timeout, unit);
    }

    /** The exit code, or null when the stream ended without one. */
    Integer statusCode() {
        return statusCode;
    }

    void closeQuietly() {
        try {
            close();
        } catch (Exception e) {
            log.debug("closing a wait stream failed", e);
        }
        ended.countDown();
    }
}
