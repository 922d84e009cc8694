package io.outrun.store;

import java.util.UUID;

/** The fence of every worker write: this execution, this attempt, held by this node. */
public record Lease(UUID executionId, int attempt, String node) {
}
