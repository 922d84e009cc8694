package io.outrun.sandbox.docker;

import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Frame;
import io.outrun.sandbox.capture.BoundedCapture;
import java.io.Closeable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Receives a container's attached stdout and stderr into one {@link BoundedCapture} each.
 *
 * <p>Nothing is accumulated here: each frame goes straight into its capture, which copies the
 * bytes it keeps at once (a frame's payload may be the reader's reused buffer) and only counts
 * the rest, so memory stays fixed whatever the command prints.
 */
final class OutputCallback extends ResultCallback.Adapter<Frame> {

    private static final Logger log = LoggerFactory.getLogger(OutputCallback.class);

    final BoundedCapture stdout;
    final BoundedCapture stderr;
    private final CountDownLatch attached = new CountDownLatch(1);
    private final CountDownLatch ended = new CountDownLatch(1);

    OutputCallback(int maxBytesPerStream) {
        this.stdout = new BoundedCapture(maxBytesPerStream);
        this.stderr = new BoundedCapture(maxBytesPerStream);
    }

    @Override
    public void onStart(Closeable stream) {
        super.onStart(stream);
        attached.countDown();
    }

    @Override
    public void onNext(Frame frame) {
        byte[] payload = frame.getPayload();
        if (payload == null) {
            return;
        }
        switch (frame.getStreamType()) {
            case STDERR -> stderr.append(payload);
            case STDOUT, RAW -> stdout.append(payload);
            default -> {
                // STDIN frames are never sent back to an attach client.
            }
        }
    }

    @Override
    public void onError(Throwable error) {
        // Closing the run closes the stream under the reader: that is expected, not an error.
        log.debug("output stream ended with an error", error);
        ended.countDown();
        super.onError(error);
    }

    @Override
    public void onComplete() {
        ended.countDown();
        super.onComplete();
    }

    /** True once the engine answered the attach: output from the container's start on is caught. */
    boolean awaitAttached(long timeout, TimeUnit unit) throws InterruptedException {
        return attached.await(timeout, unit);
    }

    /** Waits until the stream has delivered everything (it ends when the container stops). */
    boolean awaitEnded(long timeout, TimeUnit unit) throws InterruptedException {
        return ended.await(timeout, unit);
    }

    /** Ends the stream now; what was captured is kept. */
    void closeQuietly() {
        try {
            close();
        } catch (Exception e) {
            log.debug("closing an output stream failed", e);
        }
        ended.countDown();
    }
}
