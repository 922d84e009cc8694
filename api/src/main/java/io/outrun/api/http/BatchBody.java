package io.outrun.api.http;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import io.outrun.client.wire.Json;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads the envelope of {@code POST /v1/executions/batch}, {@code {"submissions": [ ... ]}}: its
 * shape and its count are the request's own errors ({@code batch_invalid}, {@code
 * batch_too_large}); each item is handed on as it is, with its size in the body, for the single
 * submit's parser to judge (a bad item fails only itself). Read with a streaming parser so that
 * each item's byte count is exact without writing it out again.
 */
final class BatchBody {

    /** Submissions in one batch at most. */
    static final int MAX_ITEMS = 1000;

    static final String EXAMPLE = "{\"submissions\": [{\"command\": \"echo one\"}, {\"command\": \"echo two\","
            + " \"idempotencyKey\": \"job-2\"}]}";

    /** One submission as sent: its JSON value and how many bytes of the body it took. */
    record Item(JsonNode node, int bytes) {
    }

    private BatchBody() {
    }

    static List<Item> read(byte[] body) {
        List<Item> items = null;
        int count = 0;
        try (JsonParser p = Json.mapper().getFactory().createParser(body)) {
            p.enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw invalid("The body must be a JSON object with a \"submissions\" array.");
            }
            for (JsonToken t = p.nextToken(); t == JsonToken.FIELD_NAME; t = p.nextToken()) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                if (!name.equals("submissions")) {
                    throw invalid("The body has a field \"" + (name.length() > 64 ? name.substring(0, 64) + "…" : name)
                            + "\"; a batch has only \"submissions\".");
                }
                if (value != JsonToken.START_ARRAY) {
                    throw invalid("\"submissions\" must be an array of submissions.");
                }
                items = new ArrayList<>();
                for (JsonToken item = p.nextToken(); item != JsonToken.END_ARRAY && item != null; item = p.nextToken()) {
                    count++;
                    if (count > MAX_ITEMS) {
                        p.skipChildren(); // counted only, to say how many were sent
                        continue;
                    }
                    long start = p.currentTokenLocation().getByteOffset();
                    JsonNode node = Json.mapper().readTree(p);
                    long end = p.currentLocation().getByteOffset();
                    items.add(new Item(node, (int) (end - start)));
                }
            }
            if (p.currentToken() != JsonToken.END_OBJECT || p.nextToken() != null) {
                throw invalid("The body must be one JSON object, with nothing after it.");
            }
        } catch (JsonProcessingException e) {
            throw invalid("The body is not valid JSON (" + e.getOriginalMessage() + ").");
        } catch (IOException e) {
            throw invalid("The body cannot be read.");
        }
        if (items == null) {
            throw invalid("The body has no \"submissions\" array.");
        }
        if (count > MAX_ITEMS) {
            throw new ApiError(413, "batch_too_large", "The batch has " + count + " submissions; at most " + MAX_ITEMS
                    + " are taken in one request. Nothing was stored.",
                    "Split it into batches of at most " + MAX_ITEMS + " submissions and send each.");
        }
        if (items.isEmpty()) {
            throw invalid("\"submissions\" is empty.");
        }
        return items;
    }

    /** The body over the server's batch limit ({@code --max-batch-body-bytes}). */
    static ApiError tooLarge(int maxBytes) {
        return new ApiError(413, "batch_too_large", "The batch's body is larger than this server's limit of " + maxBytes
                + " bytes (--max-batch-body-bytes). Nothing was stored.",
                "Split it into smaller batches; put large inputs in a `workspace` a first run fills rather than in"
                        + " each submission's `files`.");
    }

    private static ApiError invalid(String problem) {
        return new ApiError(400, "batch_invalid", problem + " Nothing was stored.",
                "Send a JSON object such as " + EXAMPLE + ": 1 to " + MAX_ITEMS + " submissions, each the body of a"
                        + " single submit (POST /v1/executions) with an optional idempotencyKey.");
    }
}
