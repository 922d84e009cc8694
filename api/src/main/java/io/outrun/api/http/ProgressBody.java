package io.outrun.api.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.outrun.core.execution.Progress;
import java.util.Iterator;

/** The body of {@code POST /v1/executions/{id}/progress}: {@code {"percent": 0-100, "message": "…"}}, at least one. */
final class ProgressBody {

    private ProgressBody() {
    }

    static JsonNode read(byte[] body) {
        JsonNode root = JsonFields.readObject(body, "{\"percent\": 40, \"message\": \"2 of 5 shards\"}");
        for (Iterator<String> names = root.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!name.equals("percent") && !name.equals("message")) {
                throw ApiError.invalid(name, "is not a field of a progress report (known: percent, message)");
            }
        }
        if (isMissing(root.get("percent")) && isMissing(root.get("message"))) {
            throw ApiError.invalid("percent", "a progress report needs a percent (0 to 100), a message, or both");
        }
        return root;
    }

    static Integer percent(JsonNode root) {
        JsonNode node = root.get("percent");
        if (isMissing(node)) {
            return null;
        }
        if (!node.isNumber() || node.doubleValue() < 0 || node.doubleValue() > 100) {
            throw ApiError.invalid("percent", "must be a number from 0 to 100");
        }
        return (int) Math.floor(node.doubleValue());
    }

    static String message(JsonNode root) {
        JsonNode node = root.get("message");
        if (isMissing(node)) {
            return null;
        }
        if (!node.isTextual()) {
            throw ApiError.invalid("message", "must be a string");
        }
        String text = node.textValue();
        if (text.length() > Progress.MAX_MESSAGE) {
            throw ApiError.invalid("message", "is longer than " + Progress.MAX_MESSAGE + " characters");
        }
        if (text.indexOf('\0') >= 0) {
            throw ApiError.invalid("message", "must not contain NUL characters");
        }
        return text;
    }

    private static boolean isMissing(JsonNode node) {
        return node == null || node.isNull();
    }
}
