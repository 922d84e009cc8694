package io.outrun.sandbox.capture;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Replaces a run's secret values in its output by {@code [secret:NAME]} as the bytes stream in,
 * before anything is kept, spooled or stored. A value split across two reads (or two flushes of
 * the output to the database) is still caught: the bytes at the end of a read that could begin a
 * value are held back until the next read tells, and given out as they are at the stream's end.
 * A multi-line value is also masked line by line (each line stripped, of at least
 * {@link #MIN_LINE_BYTES}, up to {@link #MAX_LINES}), so a key printed with other line endings or
 * in part does not show whole lines of it.
 *
 * <p>Only literal values are recognised, as in CI systems that mask secrets: a value the command
 * transforms (base64, reversed, cut to a prefix) is printed as the command printed it.
 * Not thread-safe: one stream's reader feeds it.
 */
public final class SecretMask {

    /** A line of a multi-line value shorter than this (stripped) is not masked alone: it would mask ordinary text. */
    public static final int MIN_LINE_BYTES = 8;
    /** Lines of one value masked alone, at most: each is a pattern tried wherever its first byte appears. */
    static final int MAX_LINES = 64;

    /** Where masked bytes go. */
    @FunctionalInterface
    public interface Sink {
        void write(byte[] bytes, int offset, int length);
    }

    private record Value(byte[] bytes, byte[] replacement) {
    }

    /** Longest first, so that a value containing another is masked whole. */
    private final Value[] values;
    /** Per first byte: whether some value starts with it (the common byte is ruled out at once). */
    private final boolean[] starts = new boolean[256];
    private byte[] held = new byte[0];

    private SecretMask(List<Value> values) {
        this.values = values.toArray(new Value[0]);
        for (Value v : this.values) {
            starts[v.bytes[0] & 0xFF] = true;
        }
    }

    /** A mask for {@code secrets} (name to value); null when there is nothing to mask. */
    public static SecretMask of(Map<String, String> secrets) {
        if (secrets == null || secrets.isEmpty()) {
            return null;
        }
        List<Value> values = new ArrayList<>();
        Set<String> seen = new HashSet<>(); // one pattern per text: repeats cost time, mask nothing more
        secrets.forEach((name, value) -> {
            byte[] replacement = ("[secret:" + name + "]").getBytes(StandardCharsets.UTF_8);
            if (!value.isEmpty() && seen.add(value)) {
                values.add(new Value(value.getBytes(StandardCharsets.UTF_8), replacement));
            }
            if (value.indexOf('\n') >= 0) {
                int lines = 0;
                for (String line : value.split("\r?\n")) {
                    String text = line.strip();
                    if (lines < MAX_LINES && text.getBytes(StandardCharsets.UTF_8).length >= MIN_LINE_BYTES && seen.add(text)) {
                        values.add(new Value(text.getBytes(StandardCharsets.UTF_8), replacement));
                        lines++;
                    }
                }
            }
        });
        if (values.isEmpty()) {
            return null;
        }
        values.sort(Comparator.comparingInt((Value v) -> v.bytes.length).reversed());
        return new SecretMask(values);
    }

    /** Masks {@code length} bytes of {@code bytes} into {@code out}, holding back a possible start of a value. */
    public void feed(byte[] bytes, int offset, int length, Sink out) {
        if (held.length == 0) {
            scan(bytes, offset, offset + length, out, false);
        } else {
            byte[] data = Arrays.copyOf(held, held.length + length);
            System.arraycopy(bytes, offset, data, held.length, length);
            held = new byte[0];
            scan(data, 0, data.length, out, false);
        }
    }

    /**
     * {@code bytes} masked whole, apart from the stream (a note of Outrun's own, such as an egress
     * refusal, that may name a value): what is held back of the stream is left as it is, so a
     * value printed around the note is still caught.
     */
    public byte[] maskApart(byte[] bytes) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(bytes.length);
        byte[] heldNow = held;
        scan(bytes, 0, bytes.length, out::write, true);
        held = heldNow;
        return out.toByteArray();
    }

    /** The stream ended: what was held back is masked with nothing more to come, and given out. */
    public void finish(Sink out) {
        if (held.length > 0) {
            byte[] rest = held;
            held = new byte[0];
            scan(rest, 0, rest.length, out, true);
        }
    }

    private void scan(byte[] data, int from, int end, Sink out, boolean last) {
        int copied = from;
        int i = from;
        while (i < end) {
            if (!starts[data[i] & 0xFF]) {
                i++;
                continue;
            }
            Value whole = null;
            boolean longerMayFollow = false;
            for (Value v : values) { // longest first
                int n = Math.min(v.bytes.length, end - i);
                if (Arrays.equals(data, i, i + n, v.bytes, 0, n)) {
                    if (n == v.bytes.length) {
                        whole = v;
                        break;
                    }
                    longerMayFollow = !last; // the read ends inside what may be this value
                }
            }
            if (longerMayFollow) {
                // Wait for the next read: it may complete this value (or a longer one than a match here).
                out.write(data, copied, i - copied);
                held = Arrays.copyOfRange(data, i, end);
                return;
            }
            if (whole != null) {
                out.write(data, copied, i - copied);
                out.write(whole.replacement, 0, whole.replacement.length);
                i += whole.bytes.length;
                copied = i;
            } else {
                i++;
            }
        }
        out.write(data, copied, end - copied);
    }

    /** How many bytes are held back now (tests). */
    int held() {
        return held.length;
    }
}
