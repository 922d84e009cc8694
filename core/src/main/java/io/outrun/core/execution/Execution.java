package io.outrun.core.execution;

import io.outrun.core.trace.TraceContext;
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
 * {@code bookSeq} numbers its JobRunr books: each claimable round (first queue, each re-drive,
 * hand back, drain or retry) has a job of its own, {@code jobId}.
 * {@code trace} is the W3C context its spans hang under (null: none).
 * Two columns keep names older than these words: {@code lease_owner} holds {@code leaseHolder},
 * {@code dispatch_seq} holds {@code bookSeq} (a column rename breaks the nodes of the previous
 * version during a rolling deploy, since every role migrates at start).
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
        TraceContext trace,
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
        return toBuilder().stdout(out).stderr(err).build();
    }

    /** A builder with every component null, zero or false; the stores set what they read. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding this execution's components, to change a few. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.id = id;
        b.owner = owner;
        b.command = command;
        b.image = image;
        b.workdir = workdir;
        b.env = env;
        b.labels = labels;
        b.timeoutMs = timeoutMs;
        b.maxOutputBytes = maxOutputBytes;
        b.status = status;
        b.attempt = attempt;
        b.maxAttempts = maxAttempts;
        b.leaseHolder = leaseHolder;
        b.leaseEpoch = leaseEpoch;
        b.outputEpoch = outputEpoch;
        b.leaseExpiresAt = leaseExpiresAt;
        b.cancelRequested = cancelRequested;
        b.idempotencyKey = idempotencyKey;
        b.bookSeq = bookSeq;
        b.jobId = jobId;
        b.enqueuedAt = enqueuedAt;
        b.createdAt = createdAt;
        b.startedAt = startedAt;
        b.finishedAt = finishedAt;
        b.exitCode = exitCode;
        b.errorCode = errorCode;
        b.errorMessage = errorMessage;
        b.stdout = stdout;
        b.stderr = stderr;
        b.stdin = stdin;
        b.resources = resources;
        b.startsAt = startsAt;
        b.retry = retry;
        b.webhook = webhook;
        b.trace = trace;
        b.lineage = lineage;
        b.identityAudience = identityAudience;
        b.progress = progress;
        return b;
    }

    /** Builds a {@link Execution} by naming its components. */
    public static final class Builder {
        private UUID id;
        private String owner;
        private String command;
        private String image;
        private String workdir;
        private Map<String, String> env;
        private Map<String, String> labels;
        private long timeoutMs;
        private int maxOutputBytes;
        private ExecutionStatus status;
        private int attempt;
        private int maxAttempts;
        private String leaseHolder;
        private long leaseEpoch;
        private long outputEpoch;
        private Instant leaseExpiresAt;
        private boolean cancelRequested;
        private String idempotencyKey;
        private int bookSeq;
        private UUID jobId;
        private Instant enqueuedAt;
        private Instant createdAt;
        private Instant startedAt;
        private Instant finishedAt;
        private Integer exitCode;
        private String errorCode;
        private String errorMessage;
        private Captured stdout;
        private Captured stderr;
        private StdinState stdin;
        private Resources resources;
        private Instant startsAt;
        private Retry retry;
        private Webhook webhook;
        private TraceContext trace;
        private Lineage lineage;
        private String identityAudience;
        private Progress progress;

        private Builder() {
        }

        public Builder id(UUID value) {
            this.id = value;
            return this;
        }

        public Builder owner(String value) {
            this.owner = value;
            return this;
        }

        public Builder command(String value) {
            this.command = value;
            return this;
        }

        public Builder image(String value) {
            this.image = value;
            return this;
        }

        public Builder workdir(String value) {
            this.workdir = value;
            return this;
        }

        public Builder env(Map<String, String> value) {
            this.env = value;
            return this;
        }

        public Builder labels(Map<String, String> value) {
            this.labels = value;
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

        public Builder status(ExecutionStatus value) {
            this.status = value;
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

        public Builder leaseHolder(String value) {
            this.leaseHolder = value;
            return this;
        }

        public Builder leaseEpoch(long value) {
            this.leaseEpoch = value;
            return this;
        }

        public Builder outputEpoch(long value) {
            this.outputEpoch = value;
            return this;
        }

        public Builder leaseExpiresAt(Instant value) {
            this.leaseExpiresAt = value;
            return this;
        }

        public Builder cancelRequested(boolean value) {
            this.cancelRequested = value;
            return this;
        }

        public Builder idempotencyKey(String value) {
            this.idempotencyKey = value;
            return this;
        }

        public Builder bookSeq(int value) {
            this.bookSeq = value;
            return this;
        }

        public Builder jobId(UUID value) {
            this.jobId = value;
            return this;
        }

        public Builder enqueuedAt(Instant value) {
            this.enqueuedAt = value;
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

        public Builder exitCode(Integer value) {
            this.exitCode = value;
            return this;
        }

        public Builder errorCode(String value) {
            this.errorCode = value;
            return this;
        }

        public Builder errorMessage(String value) {
            this.errorMessage = value;
            return this;
        }

        public Builder stdout(Captured value) {
            this.stdout = value;
            return this;
        }

        public Builder stderr(Captured value) {
            this.stderr = value;
            return this;
        }

        public Builder stdin(StdinState value) {
            this.stdin = value;
            return this;
        }

        public Builder resources(Resources value) {
            this.resources = value;
            return this;
        }

        public Builder startsAt(Instant value) {
            this.startsAt = value;
            return this;
        }

        public Builder retry(Retry value) {
            this.retry = value;
            return this;
        }

        public Builder webhook(Webhook value) {
            this.webhook = value;
            return this;
        }

        public Builder trace(TraceContext value) {
            this.trace = value;
            return this;
        }

        public Builder lineage(Lineage value) {
            this.lineage = value;
            return this;
        }

        public Builder identityAudience(String value) {
            this.identityAudience = value;
            return this;
        }

        public Builder progress(Progress value) {
            this.progress = value;
            return this;
        }

        public Execution build() {
            return new Execution(id, owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, status,
                    attempt, maxAttempts, leaseHolder, leaseEpoch, outputEpoch, leaseExpiresAt, cancelRequested,
                    idempotencyKey, bookSeq, jobId, enqueuedAt, createdAt, startedAt, finishedAt, exitCode,
                    errorCode, errorMessage, stdout, stderr, stdin, resources, startsAt, retry, webhook, trace,
                    lineage, identityAudience, progress);
        }
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
