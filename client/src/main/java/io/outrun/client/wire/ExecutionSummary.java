package io.outrun.client.wire;

import java.time.Instant;
import java.util.Map;

/** One row of a listing: no output, the command cut to its first 200 characters. */
public record ExecutionSummary(
        String executionId,
        String status,
        String command,
        Integer exitCode,
        int attempt,
        Instant createdAt,
        Instant startedAt,
        Instant finishedAt,
        Long durationMs,
        Map<String, String> labels) {
}
