package io.outrun.core.execution;

import io.outrun.model.output.Captured;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;

/**
 * One execution as stored: what was asked, where it stands, and what it printed so far.
 * {@code leaseHolder} is the incarnation (node id and per-process id) of the node that runs it;
 * {@code leaseEpoch} names its current (or last) claim; {@code outputEpoch} the run whose output
 * it shows (output cursors name it); {@code leaseExpiresAt} is null unless it runs;
 * {@code enqueuedAt} is its place in its owner's queue and the time from which a worker may claim it
 * (a few seconds ahead after a hand-back).
 * {@code trace} is the W3C context its spans hang under (null: none).
 * {@code lineage} names its parent when a run submitted it; {@code identityAudience} is the
 * {@code aud} of its run's identity token (null: none asked); {@code progress} the latest its run
 * reported (null: none).
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
        String leaseHolder,
        long leaseEpoch,
        long outputEpoch,
        Instant leaseExpiresAt,
        boolean cancelRequested,
        String idempotencyKey,
        int bookSeq,
        UUID jobId,
        Instant enqueuedAt,
        Instant createdAt,
        Instant startedAt,
        Instant finishedAt,
        Integer exitCode,
        String errorCode,
        String errorMessage,
        Captured stdout,
        Captured stderr,
        StdinState stdin,
        Resources resources,
        Instant startsAt,
        Retry retry,
        Webhook webhook,
        io.outrun.core.trace.TraceContext trace,
        Lineage lineage,
        String identityAudience,
        Progress progress) {

    public Execution {
        stdin = stdin == null ? StdinState.NONE : stdin;
        resources = resources == null ? Resources.NONE : resources;
        lineage = lineage == null ? Lineage.ROOT : lineage;
    }

    /** The same execution with the output read for it. */
    public Execution withOutput(Captured out, Captured err) {
        return new Execution(id, owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, status, attempt,
                maxAttempts, leaseHolder, leaseEpoch, outputEpoch, leaseExpiresAt, cancelRequested, idempotencyKey, bookSeq, jobId,
                enqueuedAt, createdAt, startedAt, finishedAt, exitCode, errorCode, errorMessage, out, err, stdin, resources,
                startsAt, retry, webhook, trace, lineage, identityAudience, progress);
    }

    /** Run time so far (running) or in all (terminal); null before the first start. */
    public Duration duration(Instant now) {
        if (startedAt == null) {
            return null;
        }
        Instant end = finishedAt != null ? finishedAt : now;
        return Duration.between(startedAt, end);
    }
}
