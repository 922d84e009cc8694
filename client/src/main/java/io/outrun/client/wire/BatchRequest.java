package io.outrun.client.wire;

import java.util.List;

/** The body of {@code POST /v1/executions/batch}: 1 to 1,000 submissions. */
public record BatchRequest(List<BatchSubmission> submissions) {
}
