package io.outrun.client.wire;

import java.util.List;

/**
 * The answer to a batch of submits: how many were accepted and refused, and one result per
 * submission, in the order sent. A bad submission fails only itself.
 */
public record BatchAnswer(int accepted, int refused, List<Result> results) {

    public BatchAnswer {
        results = results == null ? List.of() : List.copyOf(results);
    }

    /**
     * What became of the submission at {@code index}: {@code status} is the HTTP status a single
     * submit would have answered; 202 with its {@code execution} ({@code replayed}: its
     * idempotency key had been accepted before, and this is that execution), else the
     * {@code error} a single submit would have answered for it.
     */
    public record Result(int index, int status, ExecutionView execution, ErrorBody error, boolean replayed) {

        public boolean accepted() {
            return execution != null;
        }
    }
}
