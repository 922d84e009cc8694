package io.outrun.sandbox.docker;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;

/**
 * A container's stdin for a run whose owner writes to it: first the bootstrap's header and
 * command ({@code first}), then frames of the bytes written ({@link #send}), a decimal byte count
 * and a newline before each, and {@code 0\n} at the end ({@link #end}).
 *
 * <p>Frames, not the bytes themselves, because docker-java never half-closes a hijacked stdin:
 * the container could not tell the end of the owner's input from a pause. The bootstrap's relay
 * ({@link ContainerRecipe#BOOTSTRAP}) copies each frame's bytes to the command's stdin and closes
 * it at the {@code 0} frame. docker-java's copier thread blocks in {@link #read} until a frame or
 * the end comes.
 */
final class StdinFrames extends InputStream {

    private final InputStream first;
    private boolean firstDone;
    private final ArrayDeque<byte[]> frames = new ArrayDeque<>();
    private byte[] current;
    private int position;
    /** No frame is taken after the end frame; reads answer end of file once the queue is empty. */
    private boolean ended;
    /** The run is gone: reads answer end of file at once, queued frames are dropped. */
    private boolean aborted;

    StdinFrames(InputStream first) {
        this.first = first;
    }

    /** Queues {@code bytes} for the command; never blocks (the caller bounds what it sends). */
    synchronized void send(byte[] bytes) throws IOException {
        if (ended || aborted) {
            throw new IOException("the run's stdin is closed");
        }
        if (bytes.length == 0) {
            return;
        }
        frames.add((bytes.length + "\n").getBytes(StandardCharsets.US_ASCII));
        frames.add(bytes);
        notifyAll();
    }

    /** The end of the owner's input: the command reads end of file once what was sent is read. */
    synchronized void end() {
        if (!ended && !aborted) {
            frames.add("0\n".getBytes(StandardCharsets.US_ASCII));
            ended = true;
            notifyAll();
        }
    }

    /** The run ended or was removed: the copier stops. */
    synchronized void abort() {
        aborted = true;
        frames.clear();
        current = null;
        notifyAll();
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
        if (length == 0) {
            return 0;
        }
        if (!firstDone()) {
            // Outside the lock: GatedStdin blocks until its attach is confirmed.
            int n = first.read(buffer, offset, length);
            if (n >= 0) {
                return n;
            }
            synchronized (this) {
                firstDone = true;
            }
        }
        synchronized (this) {
            while (true) {
                if (aborted) {
                    return -1;
                }
                if (current == null || position >= current.length) {
                    current = frames.poll();
                    position = 0;
                }
                if (current != null) {
                    int n = Math.min(length, current.length - position);
                    System.arraycopy(current, position, buffer, offset, n);
                    position += n;
                    return n;
                }
                if (ended) {
                    return -1;
                }
                try {
                    wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while waiting for the run's stdin");
                }
            }
        }
    }

    private synchronized boolean firstDone() {
        return firstDone || aborted;
    }
}
