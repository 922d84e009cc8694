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
        return toBuilder().waitMsClamped(usedMs).build();
    }

    /** True once the status can no longer change. */
    public boolean finished() {
        return status != null && !status.equals("queued") && !status.equals("running");
    }

    /** A builder with every component null, zero or false; the server sets what it shows. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding this executionView's components, to change a few. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.executionId = executionId;
        b.status = status;
        b.command = command;
        b.exitCode = exitCode;
        b.attempt = attempt;
        b.maxAttempts = maxAttempts;
        b.cancelRequested = cancelRequested;
        b.createdAt = createdAt;
        b.startedAt = startedAt;
        b.finishedAt = finishedAt;
        b.durationMs = durationMs;
        b.timeoutMs = timeoutMs;
        b.maxOutputBytes = maxOutputBytes;
        b.labels = labels;
        b.stdout = stdout;
        b.stderr = stderr;
        b.error = error;
        b.guidance = guidance;
        b.cursor = cursor;
        b.stdin = stdin;
        b.resources = resources;
        b.waitMsClamped = waitMsClamped;
        b.startsAt = startsAt;
        b.retry = retry;
        b.webhook = webhook;
        b.parentId = parentId;
        b.cancelWithParent = cancelWithParent;
        b.identity = identity;
        b.progress = progress;
        return b;
    }

    /** Builds a {@link ExecutionView} by naming its components. */
    public static final class Builder {
        private String executionId;
        private String status;
        private String command;
        private Integer exitCode;
        private int attempt;
        private int maxAttempts;
        private boolean cancelRequested;
        private Instant createdAt;
        private Instant startedAt;
        private Instant finishedAt;
        private Long durationMs;
        private long timeoutMs;
        private int maxOutputBytes;
        private Map<String, String> labels;
        private StreamText stdout;
        private StreamText stderr;
        private ErrorInfo error;
        private String guidance;
        private String cursor;
        private StdinView stdin;
        private ResourcesView resources;
        private Long waitMsClamped;
        private Instant startsAt;
        private RetryView retry;
        private WebhookView webhook;
        private String parentId;
        private Boolean cancelWithParent;
        private IdentityView identity;
        private ProgressView progress;

        private Builder() {
        }

        public Builder executionId(String value) {
            this.executionId = value;
            return this;
        }

        public Builder status(String value) {
            this.status = value;
            return this;
        }

        public Builder command(String value) {
            this.command = value;
            return this;
        }

        public Builder exitCode(Integer value) {
            this.exitCode = value;
            return this;
        }

        public Builder attempt(int value) {
            this.attempt = value;
            return this;
        }

        public Builder maxAttempts(int value) {
            this.maxAttempts = value;
            return this;
        }

        public Builder cancelRequested(boolean value) {
            this.cancelRequested = value;
            return this;
        }

        public Builder createdAt(Instant value) {
            this.createdAt = value;
            return this;
        }

        public Builder startedAt(Instant value) {
            this.startedAt = value;
            return this;
        }

        public Builder finishedAt(Instant value) {
            this.finishedAt = value;
            return this;
        }

        public Builder durationMs(Long value) {
            this.durationMs = value;
            return this;
        }

        public Builder timeoutMs(long value) {
            this.timeoutMs = value;
            return this;
        }

        public Builder maxOutputBytes(int value) {
            this.maxOutputBytes = value;
            return this;
        }

        public Builder labels(Map<String, String> value) {
            this.labels = value;
            return this;
        }

        public Builder stdout(StreamText value) {
            this.stdout = value;
            return this;
        }

        public Builder stderr(StreamText value) {
            this.stderr = value;
            return this;
        }

        public Builder error(ErrorInfo value) {
            this.error = value;
            return this;
        }

        public Builder guidance(String value) {
            this.guidance = value;
            return this;
        }

        public Builder cursor(String value) {
            this.cursor = value;
            return this;
        }

        public Builder stdin(StdinView value) {
            this.stdin = value;
            return this;
        }

        public Builder resources(ResourcesView value) {
            this.resources = value;
            return this;
        }

        public Builder waitMsClamped(Long value) {
            this.waitMsClamped = value;
            return this;
        }

        public Builder startsAt(Instant value) {
            this.startsAt = value;
            return this;
        }

        public Builder retry(RetryView value) {
            this.retry = value;
            return this;
        }

        public Builder webhook(WebhookView value) {
            this.webhook = value;
            return this;
        }

        public Builder parentId(String value) {
            this.parentId = value;
            return this;
        }

        public Builder cancelWithParent(Boolean value) {
            this.cancelWithParent = value;
            return this;
        }

        public Builder identity(IdentityView value) {
            this.identity = value;
            return this;
        }

        public Builder progress(ProgressView value) {
            this.progress = value;
            return this;
        }

        public ExecutionView build() {
            return new ExecutionView(executionId, status, command, exitCode, attempt, maxAttempts, cancelRequested,
                    createdAt, startedAt, finishedAt, durationMs, timeoutMs, maxOutputBytes, labels, stdout, stderr,
                    error, guidance, cursor, stdin, resources, waitMsClamped, startsAt, retry, webhook, parentId,
                    cancelWithParent, identity, progress);
        }
    }
}
