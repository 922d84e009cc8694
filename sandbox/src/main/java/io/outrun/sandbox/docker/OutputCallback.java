package io.outrun.sandbox.docker;

import com.github.dockerjava.api.model.Frame;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.capture.BoundedCapture;
import io.outrun.sandbox.capture.FullOutput;
import io.outrun.sandbox.capture.SecretMask;
import io.outrun.sandbox.files.RunFiles;
import java.io.Closeable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Receives a container's attached stdout and stderr into one {@link BoundedCapture} each.
 *
 * <p>Nothing is accumulated here: each frame goes straight into its capture, which copies the
 * bytes it keeps at once (a frame's payload may be the reader's reused buffer) and only counts
 * the rest, so memory stays fixed whatever the command prints.
 */
final class OutputCallback extends StreamCallback<Frame> {

    final BoundedCapture stdout;
    final BoundedCapture stderr;
    private final CountDownLatch attached = new CountDownLatch(1);

    OutputCallback(int maxBytesPerStream) {
        this(new BoundedCapture(maxBytesPerStream), new BoundedCapture(maxBytesPerStream));
    }

    /**
     * Captures for {@code spec}: they also keep the whole stream (gzipped, spooled) once it outgrows
     * its bound, if the files ask, and mask the run's secrets.
     */
    OutputCallback(RunSpec spec) {
        this(capture(spec, "-stdout-"), capture(spec, "-stderr-"));
    }

    private static BoundedCapture capture(RunSpec spec, String stream) {
        RunFiles files = spec.files();
        return new BoundedCapture(spec.maxOutputBytes(), files.fullOutputCap() <= 0 ? null
                : new FullOutput(files.spoolDir(), spec.executionId() + stream,
                        files.fullOutputCap()), SecretMask.of(spec.secrets()));
    }

    /** Goes on filling the captures of an earlier attach (re-attached after the engine came back). */
    OutputCallback(BoundedCapture stdout, BoundedCapture stderr) {
        super("output");
        this.stdout = stdout;
        this.stderr = stderr;
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
        super.onError(error);
        attached.countDown(); // a failed attach must not be waited for until the timeout
    }

    @Override
    public void onComplete() {
        // Both streams ended: what a mask held back as a possible start of a secret is kept.
        stdout.endOfStream();
        stderr.endOfStream();
        super.onComplete();
        attached.countDown();
    }

    /**
     * True once the engine answered the attach and the stream is still open: output from the
     * container's start on is caught. False when it failed or did not answer in time.
     */
    boolean awaitAttached(long timeout, TimeUnit unit) throws InterruptedException {
        return attached.await(timeout, unit) && !awaitEnded(0, TimeUnit.MILLISECONDS);
    }
}
