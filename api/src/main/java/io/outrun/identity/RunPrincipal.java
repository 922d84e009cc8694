package io.outrun.identity;

import java.util.UUID;

/**
 * Who a run token speaks for: one attempt of one execution, acting as its owner within the run's
 * scope ({@code io.outrun.http.RunScope}).
 */
public record RunPrincipal(String owner, UUID executionId, int attempt) {
}
