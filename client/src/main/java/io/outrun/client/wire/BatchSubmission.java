package io.outrun.client.wire;

import java.util.Objects;

/**
 * One submission of a batch ({@code POST /v1/executions/batch}): a single submit's body and the
 * idempotency key a single submit sends as its {@code Idempotency-Key} header (null: none).
 */
public record BatchSubmission(SubmitRequest request, String idempotencyKey) {

    public BatchSubmission {
        Objects.requireNonNull(request, "request");
    }

    public static BatchSubmission of(SubmitRequest request) {
        return new BatchSubmission(request, null);
    }
}
