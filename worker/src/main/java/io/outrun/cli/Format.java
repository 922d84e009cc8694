package io.outrun.cli;

/** Small text helpers of the client commands. */
final class Format {

    private Format() {
    }

    static String duration(long ms) {
        if (ms < 1000) {
            return ms + " ms";
        }
        long s = ms / 1000;
        if (s < 60) {
            return String.format("%.1f s", ms / 1000.0);
        }
        return s >= 3600 ? String.format("%dh%02dm%02ds", s / 3600, s / 60 % 60, s % 60) : String.format("%dm%02ds", s / 60, s % 60);
    }

    static String oneLine(String text, int max) {
        if (text == null) {
            return "";
        }
        String line = text.strip().replaceAll("\\s+", " ");
        return line.length() > max ? line.substring(0, max - 1) + "…" : line;
    }
}
