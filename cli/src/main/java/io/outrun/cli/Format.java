package io.outrun.cli;

import io.outrun.client.wire.ProgressView;
import java.time.Duration;
import java.time.Instant;

/** Small text helpers of the client commands. */
public final class Format {

    private Format() {
    }

    public static String duration(long ms) {
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

    /** A run's latest progress report: {@code 40% 2 of 5 shards (12 s ago)}. */
    static String progress(ProgressView p, Instant now) {
        StringBuilder text = new StringBuilder();
        if (p.percent() != null) {
            text.append(p.percent()).append('%');
        }
        if (p.message() != null && !p.message().isBlank()) {
            text.append(text.length() > 0 ? " " : "").append(oneLine(p.message(), 100));
        }
        if (p.at() != null) {
            text.append(text.length() > 0 ? " " : "").append('(').append(ago(p.at(), now)).append(')');
        }
        return text.toString();
    }

    /** How long before {@code now} {@code at} was: {@code 12 s ago}, {@code 3m05s ago}; {@code just now} under a second. */
    static String ago(Instant at, Instant now) {
        long ms = Duration.between(at, now).toMillis();
        if (ms < 1000) {
            return "just now"; // also a clock a little ahead of this one
        }
        long s = ms / 1000;
        return (s < 60 ? s + " s" : duration(ms)) + " ago";
    }
}
