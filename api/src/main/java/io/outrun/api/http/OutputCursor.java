package io.outrun.api.http;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * Where a reader of an execution's output stands: the run whose output it read (the execution's
 * output epoch, which every claim renews: a run handed back by a draining node and its rerun
 * share an attempt number, never an epoch) and the byte offset it reached in each stream. Opaque to callers (base64url) so its layout can change; offsets are
 * those of the whole stream, so a cursor stays exact whatever was dropped from the middle.
 */
record OutputCursor(long epoch, long stdout, long stderr) {

    private static final String VERSION = "o2";
    /** Cursors issued before output epochs named the attempt, which equals the epoch of those runs. */
    private static final String VERSION_1 = "o1";
    static final OutputCursor START = new OutputCursor(0, 0, 0);

    String encode() {
        String raw = VERSION + ":" + epoch + ":" + stdout + ":" + stderr;
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw.getBytes(StandardCharsets.US_ASCII));
    }

    /** The cursor a caller sent, or {@link #START} when it sent none. */
    static OutputCursor decode(String text) {
        if (text == null || text.isEmpty()) {
            return START;
        }
        try {
            if (text.length() > 200) {
                throw new IllegalArgumentException("too long");
            }
            String raw = new String(Base64.getUrlDecoder().decode(text), StandardCharsets.US_ASCII);
            String[] parts = raw.split(":");
            if (parts.length != 4 || !(parts[0].equals(VERSION) || parts[0].equals(VERSION_1))) {
                throw new IllegalArgumentException("unknown layout");
            }
            OutputCursor c = new OutputCursor(Long.parseLong(parts[1]), Long.parseLong(parts[2]), Long.parseLong(parts[3]));
            if (c.epoch < 0 || c.stdout < 0 || c.stderr < 0) {
                throw new IllegalArgumentException("negative");
            }
            return c;
        } catch (IllegalArgumentException e) {
            throw ApiError.invalid("cursor", "is not a cursor this server issued; omit it to read from the start,"
                    + " or pass the cursor of the previous answer unchanged");
        }
    }
}
