package io.outrun.http;

import io.outrun.sandbox.capture.Captured;
import java.nio.charset.StandardCharsets;

/**
 * Cuts the output after a cursor out of what is kept of a stream. While the command runs the
 * answer stops before an incomplete UTF-8 character at the end (its last bytes are not flushed
 * yet), so a character is never split between two answers; after the end everything is given.
 */
final class OutputSlicer {

    private OutputSlicer() {
    }

    /** Text from byte {@code from} on, the offset to continue at, and bytes skipped as dropped. */
    record Slice(String text, long next, long droppedBytes) {
    }

    static Slice since(Captured c, long from, boolean complete) {
        byte[] head = c.head();
        byte[] tail = c.tail();
        long tailOffset = c.tailOffset();
        long end = c.totalBytes();
        if (!complete) {
            end -= incompleteEnd(tail.length > 0 ? tail : head);
        }
        from = Math.max(0, Math.min(from, end));
        StringBuilder text = new StringBuilder();
        if (from < head.length) {
            text.append(decode(head, (int) from, (int) Math.min(head.length, end)));
        }
        long dropped = Math.max(0, Math.min(tailOffset, end) - Math.max(from, head.length));
        if (dropped > 0) {
            text.append(Captured.marker(dropped));
        }
        long tailFrom = Math.max(from, tailOffset);
        if (tailFrom < end) {
            text.append(decode(tail, (int) (tailFrom - tailOffset), (int) (end - tailOffset)));
        }
        return new Slice(text.toString(), end, dropped);
    }

    /** {@code from}, moved forward past UTF-8 continuation bytes so that text shown from it starts on a character. */
    static long charStart(Captured c, long from) {
        for (int i = 0; i < 3 && from < c.totalBytes(); i++) {
            int b;
            if (from < c.head().length) {
                b = c.head()[(int) from] & 0xFF;
            } else if (from >= c.tailOffset() && from - c.tailOffset() < c.tail().length) {
                b = c.tail()[(int) (from - c.tailOffset())] & 0xFF;
            } else {
                return from; // in the dropped middle: the slice starts with its marker
            }
            if ((b & 0xC0) != 0x80) {
                return from;
            }
            from++;
        }
        return from;
    }

    /** Bytes at the end of {@code bytes} that start a character whose remaining bytes are still to come. */
    static int incompleteEnd(byte[] bytes) {
        int n = bytes.length;
        for (int back = 1; back <= Math.min(3, n); back++) {
            int b = bytes[n - back] & 0xFF;
            if ((b & 0xC0) == 0x80) {
                continue; // a continuation byte: look further back for its lead byte
            }
            int needed = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
            return needed > back ? back : 0;
        }
        return 0;
    }

    private static String decode(byte[] bytes, int from, int to) {
        return to <= from ? "" : new String(bytes, from, to - from, StandardCharsets.UTF_8);
    }
}
