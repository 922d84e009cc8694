package io.outrun.sandbox.capture;

import io.outrun.model.output.Captured;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Keeps a stream's first and last bytes within a fixed budget and counts the rest.
 *
 * <p>Half the budget holds the head (the first bytes, kept forever), half a ring of the latest
 * bytes (the tail). Memory is bounded by the budget whatever the stream's size: a command that
 * prints a gigabyte costs the same as one that prints a megabyte. Buffers grow with the output
 * (the head doubles up to its half; the ring is made only once the head is full), so the many
 * commands that print little cost little: up-front megabyte buffers were most of what a busy
 * worker allocated. Appends copy their bytes, so callers may reuse their buffers (docker-java's
 * frames share the reader's buffer).
 * Thread-safe: one thread appends while another takes snapshots.
 */
public final class BoundedCapture {

    private static final int FIRST_HEAD = 4096;

    private final int headCap;
    private final int ringCap;
    private byte[] head = new byte[0];
    private int headLength;
    private byte[] ring = new byte[0];
    private int ringStart;
    private int ringLength;
    private long total;
    private int gaps;
    /** Where the whole stream goes once it outgrows the budget (null: it is not kept). */
    private final FullOutput full;
    private boolean spilling;
    /** The run's secret values, masked before anything is kept (null: none). */
    private final SecretMask mask;

    /** @param maxBytes bytes kept in all, head plus tail; at least 2 */
    public BoundedCapture(int maxBytes) {
        this(maxBytes, null);
    }

    /**
     * @param full where the whole stream is kept once it outgrows {@code maxBytes} (null: it is
     *             not): started at the first byte that would be dropped, with every byte so far
     */
    public BoundedCapture(int maxBytes, FullOutput full) {
        this(maxBytes, full, null);
    }

    /** @param mask the run's secrets, replaced in the stream before it is kept or spooled (null: none) */
    public BoundedCapture(int maxBytes, FullOutput full, SecretMask mask) {
        this.full = full;
        this.mask = mask;
        if (maxBytes < 2) {
            throw new IllegalArgumentException("maxBytes must be at least 2: " + maxBytes);
        }
        this.headCap = maxBytes / 2;
        this.ringCap = maxBytes - maxBytes / 2;
    }

    public synchronized void append(byte[] bytes, int offset, int length) {
        if (mask != null) {
            mask.feed(bytes, offset, length, this::keep);
        } else {
            keep(bytes, offset, length);
        }
    }

    /**
     * The stream ended (its end of file, the container's attach completed): what the mask held
     * back as a possible start of a secret is kept now. Without a mask nothing is held.
     */
    public synchronized void endOfStream() {
        if (mask != null) {
            mask.finish(this::keep);
        }
    }

    /**
     * Adds a note of Outrun's own to the stream (an egress refusal): masked apart from the
     * stream, and kept after what was kept so far, while what the mask holds back of a possible
     * value stays held (a value printed around the note is still masked whole).
     */
    public synchronized void note(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        byte[] masked = mask == null ? bytes : mask.maskApart(bytes);
        keep(masked, 0, masked.length);
    }

    private void keep(byte[] bytes, int offset, int length) {
        if (full != null) {
            if (!spilling && total + length > (long) headCap + ringCap) {
                // Nothing was dropped yet: head and ring still hold the whole stream so far.
                spilling = true;
                full.write(head, 0, headLength);
                byte[] tail = ringBytes();
                full.write(tail, 0, tail.length);
            }
            if (spilling) {
                full.write(bytes, offset, length);
            }
        }
        total += length;
        int toHead = Math.min(length, headCap - headLength);
        if (headLength + toHead > head.length) {
            int size = Math.max(head.length, FIRST_HEAD);
            while (size < headLength + toHead) {
                size *= 2;
            }
            head = Arrays.copyOf(head, Math.min(size, headCap));
        }
        System.arraycopy(bytes, offset, head, headLength, toHead);
        headLength += toHead;
        offset += toHead;
        length -= toHead;
        if (length == 0) {
            return;
        }
        if (ring.length == 0) {
            ring = new byte[ringCap];
        }
        if (length >= ring.length) {
            // Only the last ring.length bytes can survive.
            System.arraycopy(bytes, offset + length - ring.length, ring, 0, ring.length);
            ringStart = 0;
            ringLength = ring.length;
            return;
        }
        int end = (ringStart + ringLength) % ring.length;
        int first = Math.min(length, ring.length - end);
        System.arraycopy(bytes, offset, ring, end, first);
        System.arraycopy(bytes, offset + first, ring, 0, length - first);
        int overflow = Math.max(0, ringLength + length - ring.length);
        ringLength = Math.min(ring.length, ringLength + length);
        ringStart = (ringStart + overflow) % ring.length;
    }

    public void append(byte[] bytes) {
        append(bytes, 0, bytes.length);
    }

    /**
     * Notes that bytes of the stream were lost here (how many is unknown: the engine was away and
     * nobody read them): the marker is written into the stream, so a reader sees the gap where
     * it happened instead of two pieces silently joined.
     */
    public synchronized void noteGap(String marker) {
        gaps++;
        endOfStream(); // what was held back before the gap is never continued
        append(marker.getBytes(StandardCharsets.UTF_8));
    }

    /** The whole stream as kept once it outgrew the budget; empty when it never did or is not kept. */
    public synchronized Optional<FullOutput.Spooled> finishFull() {
        return full == null || !spilling ? Optional.empty() : full.finish();
    }

    /** Removes the spooled copy of the whole stream, if any. */
    public synchronized void discardFull() {
        if (full != null) {
            full.close();
        }
    }

    /** How many gaps were noted ({@link #noteGap}). */
    public synchronized int gaps() {
        return gaps;
    }

    public synchronized long totalBytes() {
        return total;
    }

    /**
     * A consistent copy of what is kept: the head cut back to a whole UTF-8 character when the
     * stream went on past it, and the tail starting at a whole character when bytes were
     * dropped before it.
     */
    public synchronized Captured snapshot() {
        return Captured.ofRaw(Arrays.copyOf(head, headLength), ringBytes(), total);
    }

    private byte[] ringBytes() {
        byte[] tail = new byte[ringLength];
        int first = Math.min(ringLength, ring.length - ringStart);
        System.arraycopy(ring, ringStart, tail, 0, first);
        System.arraycopy(ring, 0, tail, first, ringLength - first);
        return tail;
    }

    /** Bytes kept per stream for the head (offsets below it are never dropped). */
    public int headCap() {
        return headCap;
    }

    /** Bytes kept per stream for the tail. */
    public int tailCap() {
        return ringCap;
    }

    /** The raw kept bytes at stream offset {@code from} and after, as they are, and the total then. */
    public record Since(long total, List<Segment> segments) {
    }

    /** Bytes of the stream starting at byte offset {@code offset}. */
    public record Segment(long offset, byte[] bytes) {
    }

    /**
     * What is still kept of the bytes from offset {@code from} on: the rest of the head and the part
     * of the tail after {@code from}, at their exact offsets (bytes dropped meanwhile are simply
     * absent). Appending these segments to a store keeps it a copy of what this capture keeps.
     */
    public synchronized Since keptSince(long from) {
        List<Segment> segments = new ArrayList<>(2);
        if (from < headLength) {
            segments.add(new Segment(from, Arrays.copyOfRange(head, (int) from, headLength)));
        }
        long ringOffset = total - ringLength;
        long start = Math.max(from, ringOffset);
        if (start < total) {
            byte[] tail = ringBytes();
            segments.add(new Segment(start, Arrays.copyOfRange(tail, (int) (start - ringOffset), tail.length)));
        }
        return new Since(total, segments);
    }
}
