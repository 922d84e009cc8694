package io.outrun.client.wire;

import java.time.Instant;
import java.util.Map;

/**
 * One execution as {@code GET /v1/executions/{id}} shows it (also the answer of submit and
 * cancel). Times are the database's, ISO-8601 UTC. With {@code ?output=tail} (the default) the
 * command is cut to its first 200 characters and each stream shows its last 4 KiB;
 * {@code ?output=full} gives both whole, {@code ?output=none} no output text.
 *
 * @param executionId     the id to poll, follow and cancel with
 * @param status          queued | running | succeeded | failed | timed_out | cancelled
 * @param exitCode        the command's exit code once it ended (null before, or when killed before exiting)
 * @param attempt         attempts started so far (a lost worker's attempt is retried)
 * @param maxAttempts     attempts allowed before a lost execution fails
 * @param cancelRequested true once its owner asked to cancel it
 * @param durationMs      run time so far (running) or in all (finished); null before the start
 * @param timeoutMs       the effective (clamped) timeout
 * @param maxOutputBytes  the effective (clamped) bytes kept per stream
 * @param error           why it did not succeed (failed, timed_out, cancelled), else null
 * @param guidance        what to do next
 * @param cursor          output cursor at the end of the output printed so far: pass it to
 *                        {@code GET …/output?cursor=} to read only what comes after this answer
 * @param stdin           the stdin of a run submitted with it open (pipe or tty), else absent
 * @param resources       memory, CPUs, pids and tmpfs the run asked for, as clamped (absent: the node's defaults)
 * @param waitMsClamped   present when the waitMs asked for was above this server's maximum: the wait it used
 * @param startsAt        present for a delayed start ({@code delayMs} or {@code startAt}): when it may start
 * @param retry           present when the submission asked for retries of a failed command: how they went
 * @param webhook         present when the submission named a completion webhook: how its delivery goes
 * @param parentId        present for a child (submitted by a run with its run token): the parent's id
 * @param cancelWithParent present for a child: whether it is cancelled when its parent ends
 * @param identity        present when the submission asked for an identity token: its audience
 * @param progress        present once the run reported progress: the latest it reported
 */
public record ExecutionView(
        String executionId,
        String status,
        String command,
        Integer exitCode,
        int attempt,
        int maxAttempts,
        boolean cancelRequested,
        Instant createdAt,
        Instant startedAt,
        Instant finishedAt,
        Long durationMs,
        long timeoutMs,
        int maxOutputBytes,
        Map<String, String> labels,
        StreamText stdout,
        StreamText stderr,
        ErrorInfo error,
        String guidance,
        String cursor,
        StdinView stdin,
        ResourcesView resources,
        Long waitMsClamped,
        Instant startsAt,
        RetryView retry,
        WebhookView webhook,
        String parentId,
        Boolean cancelWithParent,
        IdentityView identity,
        ProgressView progress) {

    /** The same answer, saying that the wait asked for was clamped to {@code usedMs}. */
    public ExecutionView withWaitMsClamped(Long usedMs) {
        return new ExecutionView(executionId, status, command, exitCode, attempt, maxAttempts, cancelRequested, createdAt,
                startedAt, finishedAt, durationMs, timeoutMs, maxOutputBytes, labels, stdout, stderr, error, guidance,
                cursor, stdin, resources, usedMs, startsAt, retry, webhook, parentId, cancelWithParent,
                identity, progress);
    }

    /** True once the status can no longer change. */
    public boolean finished() {
        return status != null && !status.equals("queued") && !status.equals("running");
    }
}
