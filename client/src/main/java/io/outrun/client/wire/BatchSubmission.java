package io.outrun.client.wire;

import com.fasterxml.jackson.annotation.JsonValue;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Objects;

/**
 * One submission of {@code POST /v1/executions/batch}: a single submit's body ({@link
 * SubmitRequest}, without {@code waitMs}: a batch answers at once) and its own optional
 * idempotency key (what a single submit sends as the {@code Idempotency-Key} header), written as
 * the item's {@code idempotencyKey} field.
 */
public record BatchSubmission(SubmitRequest request, String idempotencyKey) {

    public BatchSubmission {
        Objects.requireNonNull(request, "request");
    }

    public static BatchSubmission of(SubmitRequest request) {
        return new BatchSubmission(request, null);
    }

    public static BatchSubmission of(SubmitRequest request, String idempotencyKey) {
        return new BatchSubmission(request, idempotencyKey);
    }

    /** The item as the wire has it: the request's fields and, beside them, {@code idempotencyKey}. */
    @JsonValue
    public ObjectNode wire() {
        ObjectNode item = Json.mapper().valueToTree(request);
        if (idempotencyKey != null) {
            item.put("idempotencyKey", idempotencyKey);
        }
        return item;
    }
}
