package io.outrun.client.wire;

import java.time.Instant;

/**
 * The latest progress a run reported of itself (issue 31: {@code POST /v1/executions/{id}/progress}
 * with its run token); only the latest is kept.
 *
 * @param percent 0 to 100, absent when only a message was reported
 * @param message up to 500 characters, absent when only a percent was reported
 * @param at      when it was stored
 */
public record ProgressView(Integer percent, String message, Instant at) {
}
