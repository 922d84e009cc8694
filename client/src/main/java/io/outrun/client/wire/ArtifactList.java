package io.outrun.client.wire;

import java.util.List;

/** The answer of {@code GET /v1/executions/{id}/artifacts}. */
public record ArtifactList(String executionId, List<Item> artifacts) {

    /** One artifact; see the OpenAPI schema {@code Artifact}. */
    public record Item(String name, String status, long size, String sha256, String detail, String url) {
    }
}
