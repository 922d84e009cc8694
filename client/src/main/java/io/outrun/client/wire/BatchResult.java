package io.outrun.client.wire;

/**
 * What one submission of a batch came to, at its {@code index} in the request: {@code status} is
 * the HTTP status a single submit of it would have answered. Accepted (202, or 200 for a repeat of
 * an execution that has ended): {@code execution} is the single submit's answer and {@code
 * replayed} says whether its idempotency key named an existing execution. Refused (4xx, 5xx):
 * {@code error} is the single submit's error body, guidance included.
 */
public record BatchResult(int index, int status, ExecutionView execution, Boolean replayed, ErrorBody error) {

    public static BatchResult accepted(int index, int status, ExecutionView execution, boolean replayed) {
        return new BatchResult(index, status, execution, replayed, null);
    }

    public static BatchResult refused(int index, int status, ErrorBody error) {
        return new BatchResult(index, status, null, null, error);
    }

    /** Whether it was stored (or named an execution already stored). */
    public boolean ok() {
        return execution != null;
    }
}
