package io.outrun.execution;

import io.outrun.sandbox.capture.Captured;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;

/**
 * One execution as stored: what was asked, where it stands, and what it printed so far.
 * Times come from the database's clock.
 */
public record Execution(
        UUID id,
        String owner,
        String command,
        String image,
        String workdir,
        Map<String, String> env,
        Map<String, String> labels,
        long timeoutMs,
        int maxOutputBytes,
        ExecutionStatus status,
        int attempt,
        int maxAttempts,
        String leaseOwner,
        Instant leaseExpiresAt,
        boolean cancelRequested,
        String idempotencyKey,
        int dispatchSeq,
        UUID jobId,
        Instant createdAt,
        Instant startedAt,
        Instant finishedAt,
        Integer exitCode,
        String errorCode,
        String errorMessage,
        Captured stdout,
        Captured stderr) {

    /** Run time so far (running) or in all (terminal); null before the first start. */
    public Duration duration(Instant now) {
        if (startedAt == null) {
            return null;
        }
        Instant end = finishedAt != null ? finishedAt : now;
        return Duration.between(startedAt, end);
    }
}
