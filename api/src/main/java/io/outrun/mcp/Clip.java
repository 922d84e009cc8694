package io.outrun.mcp;

/**
 * Bounds the text one tool result carries: an agent's context is the scarce resource, so a
 * flood keeps its first and last characters and says how many were left out and how to read them.
 */
final class Clip {

    private Clip() {
    }

    static String text(String text, int limit, String howToReadAll) {
        if (text == null || text.length() <= limit) {
            return text;
        }
        int head = limit / 4;
        int tail = limit - head;
        int headEnd = Character.isHighSurrogate(text.charAt(head - 1)) ? head - 1 : head;
        int tailStart = text.length() - tail;
        if (Character.isLowSurrogate(text.charAt(tailStart))) {
            tailStart++;
        }
        int omitted = tailStart - headEnd;
        return text.substring(0, headEnd) + "\n[… " + omitted + " characters not shown here; " + howToReadAll + " …]\n"
                + text.substring(tailStart);
    }
}
