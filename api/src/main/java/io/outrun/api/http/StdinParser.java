package io.outrun.api.http;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectReader;
import io.outrun.client.wire.Json;
import io.outrun.core.store.StdinStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Iterator;
import java.util.Set;

/**
 * Reads the body of a stdin write: {@code {"text": "…"}} (UTF-8) or {@code {"data": "<base64>"}}
 * (any bytes), and {@code "eof": true} to close the stdin after them (or alone).
 */
final class StdinParser {

    /** A decoded write: the bytes to append and whether the stdin ends after them. */
    record Write(byte[] bytes, boolean eof) {
    }

    private static final Set<String> FIELDS = Set.of("text", "data", "eof");
    /** The body limit: a write's bytes as JSON text at its widest (a control character escaped in 6). */
    static final int MAX_BODY_BYTES = StdinStore.MAX_WRITE_BYTES * 6 + 8192;

    private static final ObjectReader JSON = Json.mapper().reader()
            .with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .with(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private StdinParser() {
    }

    static Write parse(byte[] body) {
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (IOException e) {
            throw ApiError.invalid("body", "is not valid JSON; send {\"text\": \"yes\\n\"} or {\"eof\": true}");
        }
        if (root == null || !root.isObject()) {
            throw ApiError.invalid("body", "must be a JSON object such as {\"text\": \"yes\\n\"} or {\"eof\": true}");
        }
        for (Iterator<String> names = root.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!FIELDS.contains(name)) {
                throw ApiError.invalid(name, "is not a field of a stdin write (known: text, data, eof)");
            }
        }
        JsonNode text = root.get("text");
        JsonNode data = root.get("data");
        JsonNode eofNode = root.get("eof");
        if (eofNode != null && !eofNode.isNull() && !eofNode.isBoolean()) {
            throw ApiError.invalid("eof", "must be true or false");
        }
        boolean eof = eofNode != null && eofNode.booleanValue();
        boolean hasText = text != null && !text.isNull();
        boolean hasData = data != null && !data.isNull();
        if (hasText && hasData) {
            throw ApiError.invalid("data", "cannot be sent with text in the same write: send one of them");
        }
        byte[] bytes;
        if (hasText) {
            if (!text.isTextual()) {
                throw ApiError.invalid("text", "must be a string (its UTF-8 bytes are written; end a line with \\n)");
            }
            bytes = text.textValue().getBytes(StandardCharsets.UTF_8);
        } else if (hasData) {
            if (!data.isTextual()) {
                throw ApiError.invalid("data", "must be a base64 string");
            }
            try {
                bytes = Base64.getDecoder().decode(data.textValue());
            } catch (IllegalArgumentException e) {
                throw ApiError.invalid("data", "is not valid base64 (" + e.getMessage() + ")");
            }
        } else if (eof) {
            bytes = new byte[0];
        } else {
            throw ApiError.invalid("body", "has nothing to write: send text, data, or \"eof\": true");
        }
        if (bytes.length > StdinStore.MAX_WRITE_BYTES) {
            throw new ApiError(413, "request_too_large", "A stdin write carries at most " + StdinStore.MAX_WRITE_BYTES
                    + " bytes; this one has " + bytes.length + ".", "Split it into several writes; they reach the"
                    + " command in the order they were made.");
        }
        return new Write(bytes, eof);
    }
}
