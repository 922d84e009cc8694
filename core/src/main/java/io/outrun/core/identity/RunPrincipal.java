package io.outrun.core.identity;

import java.util.UUID;

/**
 * Who a run token speaks for: one attempt of one execution, acting as its owner within the run's
 * scope ({@code io.outrun.api.http.RunScope}). {@code leaseEpoch} names the claim the attempt ran under:
 * a hand-back (a drain, a sandbox that could not start) re-runs the same attempt number under a
 * new claim, and the token of the one before must not come back with it.
 */
public record RunPrincipal(String owner, UUID executionId, int attempt, long leaseEpoch) {
}
