package io.outrun.sandbox.docker;

import java.io.InputStream;
import java.io.InterruptedIOException;

/**
 * A pooled run's stdin (its environment and command), held back until the attach is confirmed.
 *
 * <p>docker-java starts copying stdin as soon as the attach connects. A pooled container is
 * already running, so a short command could run and end before the attach was checked, and an
 * ended stream is also what a dead pooled container gives: the run would be taken for a failed
 * take and run again in a fresh container. Held back, the bytes reach a container that was alive
 * and waiting when the attach was confirmed; if it was not, they never leave ({@link #abandon}).
 */
final class GatedStdin extends InputStream {

    private final byte[] bytes;
    private int position;
    /** null while held, true once opened, false once abandoned. */
    private Boolean open;

    GatedStdin(byte[] bytes) {
        this.bytes = bytes;
    }

    /** Lets the bytes go: the attach is confirmed. */
    synchronized void open() {
        if (open == null) {
            open = true;
            notifyAll();
        }
    }

    /** The run will not go to this container: the copier sees the end, nothing is sent. */
    synchronized void abandon() {
        if (open == null) {
            open = false;
            notifyAll();
        }
    }

    @Override
    public synchronized int read() throws InterruptedIOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public synchronized int read(byte[] buffer, int offset, int length) throws InterruptedIOException {
        while (open == null) {
            try {
                wait();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while the pooled run's stdin was held");
            }
        }
        if (!open || position >= bytes.length) {
            return -1;
        }
        int n = Math.min(length, bytes.length - position);
        System.arraycopy(bytes, position, buffer, offset, n);
        position += n;
        return n;
    }
}
