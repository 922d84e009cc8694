package io.outrun.sandbox.docker;

import com.github.dockerjava.api.async.ResultCallback;
import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A docker-java stream callback that says when its stream has ended, however it ended (the
 * engine completed it, it broke, or we closed it). Waiting on it never closes the stream, unlike
 * {@code awaitCompletion(timeout)}.
 */
abstract class StreamCallback<T> extends ResultCallback.Adapter<T> {

    private static final Logger log = LoggerFactory.getLogger(StreamCallback.class);

    private final CountDownLatch ended = new CountDownLatch(1);
    private final String name;

    /** @param name what the stream carries, for logs ("wait", "output") */
    StreamCallback(String name) {
        this.name = name;
    }

    @Override
    public void onError(Throwable error) {
        // Closing a run closes its streams under their readers: expected, not an error.
        // Also an engine that restarts cuts every stream: its verdict is the run's to draw, so no
        // stack trace at ERROR here (the template's own onError would log one).
        log.debug("{} stream ended with an error", name, error);
        ended.countDown();
        try {
            close();
        } catch (IOException | RuntimeException e) {
            log.debug("closing a broken {} stream failed", name, e);
        }
    }

    @Override
    public void onComplete() {
        ended.countDown();
        super.onComplete();
    }

    /** Waits until the stream has ended; true when it did within the time. */
    boolean awaitEnded(long timeout, TimeUnit unit) throws InterruptedException {
        return ended.await(timeout, unit);
    }

    /** Ends the stream now; what it delivered so far is kept. */
    void closeQuietly() {
        try {
            close();
        } catch (Exception e) {
            log.debug("closing a {} stream failed", name, e);
        }
        ended.countDown();
    }
}
