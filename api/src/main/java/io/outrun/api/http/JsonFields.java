package io.outrun.api.http;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outrun.client.wire.Json;
import java.io.IOException;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads one field of a JSON request body, checked: its type, its range or length, and no NUL or
 * unpaired surrogate in a string (PostgreSQL cannot store them, and a changed value would break
 * idempotent repeats). Each problem is a 400 {@code invalid_request} naming the field. Shared by
 * the submit, the schedules and the progress bodies.
 */
final class JsonFields {

    // Trailing garbage and repeated fields are errors, not silently ignored or overwritten.
    private static final ObjectReader JSON = Json.mapper().reader()
            .with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .with(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private JsonFields() {
    }

    static boolean flag(JsonNode root, String field) {
        JsonNode node = root.get(field);
        if (node == null || node.isNull()) {
            return false;
        }
        if (!node.isBoolean()) {
            throw ApiError.invalid(field, "must be true or false");
        }
        return node.booleanValue();
    }

    static Integer clampedInt(JsonNode root, String field, int min, int max) {
        JsonNode node = root.get(field);
        if (node == null || node.isNull()) {
            return null;
        }
        return (int) Math.min(positive(root, field, min, min), max);
    }

    static Map<String, String> stringMap(JsonNode root, String field, int maxEntries) {
        JsonNode node = root.get(field);
        Map<String, String> map = new LinkedHashMap<>();
        if (node == null || node.isNull()) {
            return map;
        }
        if (!node.isObject()) {
            throw ApiError.invalid(field, "must be an object of string values, e.g. {\"KEY\": \"value\"}");
        }
        if (node.size() > maxEntries) {
            throw ApiError.invalid(field, "has " + node.size() + " entries; at most " + maxEntries + " are allowed");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String key = field + "." + e.getKey();
            if (!e.getValue().isTextual()) {
                throw ApiError.invalid(key, "must be a string");
            }
            noNul(key, e.getKey());
            map.put(e.getKey(), noNul(key, e.getValue().textValue()));
        }
        return map;
    }

    /**
     * A request body that must be one JSON object (no trailing data, no repeated field); each
     * problem a 400 on {@code body} that shows {@code example}.
     */
    static JsonNode readObject(byte[] body, String example) {
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (JsonProcessingException e) {
            throw ApiError.invalid("body", "is not valid JSON (" + e.getOriginalMessage() + ")");
        } catch (IOException e) {
            throw ApiError.invalid("body", "cannot be read");
        }
        if (root == null || root.isMissingNode()) {
            throw ApiError.invalid("body", "is empty; send a JSON object such as " + example);
        }
        if (!(root instanceof ObjectNode)) {
            throw ApiError.invalid("body", "must be a JSON object such as " + example);
        }
        return root;
    }

    /** A string field, or null when absent or null; checked for type, length and NUL. */
    static String string(JsonNode root, String field, int maxLength) {
        JsonNode node = root.get(field);
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isTextual()) {
            throw ApiError.invalid(field, "must be a string, got " + node.getNodeType().name().toLowerCase());
        }
        String value = node.textValue();
        if (value.length() > maxLength) {
            throw ApiError.invalid(field, "is longer than " + maxLength + " characters");
        }
        return noNul(field, value);
    }

    static long positive(JsonNode root, String field, long min, long fallback) {
        JsonNode node = root.get(field);
        if (node == null || node.isNull()) {
            return fallback;
        }
        if (!node.isIntegralNumber()) {
            throw ApiError.invalid(field, "must be an integer" + (field.endsWith("Ms") ? " number of milliseconds"
                    : field.endsWith("Bytes") ? " number of bytes" : ""));
        }
        if (!node.canConvertToLong()) {
            // Beyond 64 bits: as documented, too large is clamped to the server's maximum.
            if (node.bigIntegerValue().signum() > 0) {
                return Long.MAX_VALUE;
            }
            throw ApiError.invalid(field, "must be at least " + min + ", got " + node.asText());
        }
        long value = node.longValue();
        if (value < min) {
            throw ApiError.invalid(field, "must be at least " + min + ", got " + value);
        }
        return value;
    }

    static String noNul(String field, String value) {
        if (value.indexOf('\0') >= 0) {
            throw ApiError.invalid(field, "must not contain NUL characters");
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < value.length() && Character.isLowSurrogate(value.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                // Not text: it cannot be stored as UTF-8 unchanged, and a changed value would break
                // idempotent retries of the very same request.
                throw ApiError.invalid(field, "contains an unpaired UTF-16 surrogate (\\u" + Integer.toHexString(c)
                        + ") at character " + i + "; send valid Unicode text");
            }
        }
        return value;
    }
}
