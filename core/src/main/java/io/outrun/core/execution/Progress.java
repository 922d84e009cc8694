package io.outrun.core.execution;

import java.time.Instant;

/**
 * The latest progress a run reported of itself ({@code POST /v1/executions/{id}/progress} with
 * its run token); only the latest is kept.
 *
 * @param percent 0 to 100, or null when only a message was given
 * @param message up to {@link #MAX_MESSAGE} characters, or null when only a percent was given
 * @param at      when it was stored (the database's clock)
 */
public record Progress(Integer percent, String message, Instant at) {

    public static final int MAX_MESSAGE = 500;
}
