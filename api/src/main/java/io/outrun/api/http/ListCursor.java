package io.outrun.api.http;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.UUID;

/** Where a listing stopped: the (createdAt, id) of the last row shown. Opaque to callers. */
record ListCursor(Instant createdAt, UUID id) {

    private static final String VERSION = "l1";

    String encode() {
        String raw = VERSION + "|" + createdAt + "|" + id;
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw.getBytes(StandardCharsets.US_ASCII));
    }

    /** The cursor a caller sent, or null for the first page. */
    static ListCursor decode(String text) {
        if (text == null || text.isEmpty()) {
            return null;
        }
        try {
            if (text.length() > 200) {
                throw new IllegalArgumentException("too long");
            }
            String[] parts = new String(Base64.getUrlDecoder().decode(text), StandardCharsets.US_ASCII).split("\\|");
            if (parts.length != 3 || !parts[0].equals(VERSION)) {
                throw new IllegalArgumentException("unknown layout");
            }
            Instant createdAt = Instant.parse(parts[1]);
            if (createdAt.isBefore(Instant.EPOCH) || createdAt.isAfter(Instant.parse("9999-12-31T23:59:59Z"))) {
                throw new IllegalArgumentException("out of range"); // PostgreSQL's timestamps end well before Instant's
            }
            return new ListCursor(createdAt, UUID.fromString(parts[2]));
        } catch (RuntimeException e) {
            throw ApiError.invalid("after", "is not a cursor this server issued; pass the `next` of the previous page"
                    + " unchanged, or omit it for the first page");
        }
    }
}
