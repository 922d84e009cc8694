package io.outrun.worker.lease;

import io.outrun.sandbox.Run;
import io.outrun.sandbox.capture.BoundedCapture;
import io.outrun.core.store.Chunk;
import io.outrun.core.store.Lease;
import java.util.List;

/**
 * How far one stream of one run is stored: the store holds every byte the capture keeps below
 * {@link #stored}, so a flush appends only the kept bytes after it. Tail chunks that fell out of
 * the kept tail are deleted in batches, once they add up to a whole tail (so at most twice the
 * tail is ever stored). Used by one thread at a time (the flush, then the end).
 */
final class OutputTracker {

    private final int stream;
    private final int tailCap;
    private long stored;
    private long droppedBelow;

    OutputTracker(int stream, int maxOutputBytes) {
        this.stream = stream;
        this.tailCap = maxOutputBytes - maxOutputBytes / 2;
    }

    /** The next write of this stream: its chunks, how far it reaches, and what to drop (0: nothing). */
    record Next(List<Chunk> chunks, long reaches, long dropBelow) {
        boolean isEmpty() {
            return chunks.isEmpty() && dropBelow == 0;
        }
    }

    Next next(Lease lease, Run run) {
        BoundedCapture.Since since = run.keptSince(stream, stored);
        List<Chunk> chunks = since.segments().stream()
                .map(s -> new Chunk(lease.executionId(), lease.epoch(), stream, s.offset(), s.bytes())).toList();
        long windowStart = since.total() - tailCap;
        long dropBelow = windowStart - droppedBelow >= tailCap ? windowStart : 0;
        return new Next(chunks, since.total(), dropBelow);
    }

    /** The write of {@code next} landed. */
    void stored(Next next) {
        stored = Math.max(stored, next.reaches());
        if (next.dropBelow() > 0) {
            droppedBelow = next.dropBelow();
        }
    }

    long stored() {
        return stored;
    }
}
