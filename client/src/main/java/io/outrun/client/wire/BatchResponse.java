package io.outrun.client.wire;

import java.util.List;

/**
 * The answer of {@code POST /v1/executions/batch} (HTTP 200 whenever the request itself was
 * well-formed): how many submissions were {@code accepted} and {@code refused}, one {@link
 * BatchResult} per submission in the request's order, and what to do next.
 */
public record BatchResponse(int accepted, int refused, List<BatchResult> results, String guidance) {
}
