package io.outrun.api.http;

import io.outrun.model.output.Captured;
import java.nio.charset.StandardCharsets;

/**
 * Cuts the output after a cursor out of what is kept of a stream. While the command runs the
 * answer stops before an incomplete UTF-8 character at the end (its last bytes are not flushed
 * yet), so a character is never split between two answers; after the end everything is given.
 */
final class OutputSlicer {

    private OutputSlicer() {
    }

    /**
     * Text from byte {@code from} on, the offset to continue at, bytes skipped as dropped, and
     * whether kept bytes remain after {@code next} (the answer stopped at its byte budget).
     */
    record Slice(String text, long next, long droppedBytes, boolean more) {
    }

    /** Everything kept from {@code from} on. */
    static Slice since(Captured c, long from, boolean complete) {
        return since(c, from, complete, Long.MAX_VALUE);
    }

    /**
     * At most {@code maxBytes} bytes of kept output from {@code from} on, contiguous and cut
     * before a character that does not fit, so that a reader paging by {@code next} gets every
     * kept byte exactly once. The dropped middle costs nothing of the budget: its marker stands
     * for it and the slice goes on after it.
     */
    static Slice since(Captured c, long from, boolean complete, long maxBytes) {
        byte[] head = c.head();
        byte[] tail = c.tail();
        long tailOffset = c.tailOffset();
        long end = c.totalBytes();
        if (!complete) {
            end -= incompleteEnd(tail.length > 0 ? tail : head);
        }
        long pos = Math.max(0, Math.min(from, end));
        long budget = Math.max(1, maxBytes);
        StringBuilder text = new StringBuilder();
        if (pos < head.length) {
            long stop = cut(head, 0, pos, Math.min(head.length, end), budget);
            text.append(decode(head, (int) pos, (int) stop));
            budget -= stop - pos;
            pos = stop;
        }
        long dropped = 0;
        if (pos >= head.length) {
            dropped = Math.max(0, Math.min(tailOffset, end) - pos);
            if (dropped > 0) {
                text.append(Captured.marker(dropped));
                pos += dropped;
            }
            long tailFrom = Math.max(pos, tailOffset);
            if (tailFrom < end && budget > 0) {
                long stop = cut(tail, tailOffset, tailFrom, end, budget);
                text.append(decode(tail, (int) (tailFrom - tailOffset), (int) (stop - tailOffset)));
                pos = stop;
            }
        }
        return new Slice(text.toString(), pos, dropped, pos < end);
    }

    /**
     * Where a slice of {@code bytes} (which start at stream offset {@code base}) from
     * {@code from} ends: at {@code limit}, or earlier at the budget, moved back to the start of
     * the character the budget would split (but past at least one character).
     */
    private static long cut(byte[] bytes, long base, long from, long limit, long budget) {
        if (limit - from <= budget) {
            return limit;
        }
        long stop = from + budget;
        while (stop > from && (bytes[(int) (stop - base)] & 0xC0) == 0x80) {
            stop--;
        }
        if (stop == from) { // a budget smaller than one character: give that character whole
            stop++;
            while (stop < limit && (bytes[(int) (stop - base)] & 0xC0) == 0x80) {
                stop++;
            }
        }
        return stop;
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
