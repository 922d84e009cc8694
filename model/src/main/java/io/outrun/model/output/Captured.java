package io.outrun.model.output;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * What is kept of one stream: its head (from byte 0), its tail (ending at the last byte) and the
 * total number of bytes the stream produced. Byte offsets are those of the whole stream, so a
 * reader's cursor stays exact whatever was dropped in the middle.
 */
public record Captured(byte[] head, byte[] tail, long totalBytes) {

    public static final Captured EMPTY = new Captured(new byte[0], new byte[0], 0);

    /**
     * What is kept, from the raw head (bytes from offset 0) and raw tail (bytes ending at
     * {@code total}): the head is cut back to a whole UTF-8 character when the stream went on past
     * it, and the tail starts at a whole character when bytes were dropped before it. The one
     * rule for a capture in memory and for output read back from the store.
     */
    public static Captured ofRaw(byte[] head, byte[] tail, long total) {
        int headKept = head.length;
        int tailSkip = 0;
        if (total > head.length) {
            headKept = Utf8.wholeCharsPrefix(head, head.length);
        }
        if (total > (long) head.length + tail.length) {
            tailSkip = Utf8.continuationPrefix(tail);
        }
        byte[] headCopy = headKept == head.length ? head : Arrays.copyOf(head, headKept);
        byte[] tailCopy = tailSkip == 0 ? tail : Arrays.copyOfRange(tail, tailSkip, tail.length);
        if (headKept < head.length && total <= (long) head.length + tail.length) {
            // Nothing was dropped yet: the bytes cut from the head's end move to the tail's start.
            byte[] moved = new byte[head.length - headKept + tailCopy.length];
            System.arraycopy(head, headKept, moved, 0, head.length - headKept);
            System.arraycopy(tailCopy, 0, moved, head.length - headKept, tailCopy.length);
            tailCopy = moved;
        }
        return new Captured(headCopy, tailCopy, total);
    }

    /** Offset in the whole stream of the tail's first byte. */
    public long tailOffset() {
        return totalBytes - tail.length;
    }

    /** Bytes produced but not kept (the dropped middle). */
    public long droppedBytes() {
        return totalBytes - head.length - tail.length;
    }

    public boolean truncated() {
        return droppedBytes() > 0;
    }

    /** Head, a marker naming the dropped byte count when anything was dropped, then the tail. */
    public String text() {
        return since(0).text();
    }

    /**
     * The kept output from stream offset {@code cursor} on, as text; the new cursor is
     * {@link #totalBytes()}. When the cursor lies in the dropped middle, the answer starts with
     * the marker.
     */
    public Slice since(long cursor) {
        cursor = Math.max(0, Math.min(cursor, totalBytes));
        StringBuilder text = new StringBuilder();
        long headEnd = head.length;
        if (cursor < headEnd) {
            text.append(decode(head, (int) cursor, head.length));
        }
        long dropped = Math.max(0, tailOffset() - Math.max(cursor, headEnd));
        if (dropped > 0) {
            text.append(marker(dropped));
        }
        long from = Math.max(cursor, tailOffset());
        if (from < totalBytes) {
            text.append(decode(tail, (int) (from - tailOffset()), tail.length));
        }
        return new Slice(text.toString(), totalBytes, dropped);
    }

    public static String marker(long droppedBytes) {
        // Where the whole stream is: the API lists it among the artifacts once the command ended.
        return "\n[... outrun: " + droppedBytes + " bytes of output dropped here; the whole stream is kept as the"
                + " artifact stdout or stderr once the command ends ...]\n";
    }

    private static String decode(byte[] bytes, int from, int to) {
        // Invalid UTF-8 (binary output) becomes U+FFFD: the text always survives JSON.
        return new String(bytes, from, to - from, StandardCharsets.UTF_8);
    }

    /** Output text after a cursor, the cursor to ask with next, and bytes skipped in between. */
    public record Slice(String text, long nextCursor, long droppedBytes) {
    }
}
