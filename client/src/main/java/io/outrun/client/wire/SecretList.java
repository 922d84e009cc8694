package io.outrun.client.wire;

import java.util.List;

/** The answer of {@code GET /v1/secrets}: names and times, never values. */
public record SecretList(List<Item> secrets) {

    /** One secret; see the OpenAPI schema {@code Secret}. */
    public record Item(String name, String createdAt, String updatedAt) {
    }
}
