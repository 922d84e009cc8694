package io.outrun.core.execution;

import io.outrun.model.inputs.StdinMode;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * A validated, clamped request to run a command, ready to store.
 *
 * @param owner          who submits; sees and controls only its own executions
 * @param command        bash source, any length up to the API's body limit
 * @param image          container image, or null for the node's default
 * @param workdir        working directory in the sandbox, or null
 * @param env            environment, already filtered by the operator's allowlist
 * @param labels         free-form labels for the owner's own bookkeeping
 * @param timeoutMs      wall-clock limit in milliseconds
 * @param maxOutputBytes bytes kept per stream
 * @param maxAttempts    attempts before a lost execution is reaped to failed
 * @param idempotencyKey a repeat with the same key from the same owner returns the first one
 * @param inputs         input files, artifacts to collect, workspace ({@link RunInputs#NONE}: none)
 * @param stdin          whether the command's stdin stays open, and as a pipe or a terminal
 * @param resources      memory, CPU, pids and tmpfs asked beyond the node's defaults ({@link Resources#NONE}: none)
 * @param startAt        start no sooner than this instant, or null
 * @param delayMs        start no sooner than this long after the insert (the database's clock), or null
 * @param retry          retries of a failed command ({@link Retry#policy}), or null: none
 * @param webhook        where to POST the execution's end (issue 28), checked against the operator's list; or null
 * @param lineage        its parent when a run submitted it with its run token ({@link Lineage#ROOT}: none)
 * @param identityAudience the {@code aud} of its run's {@code OUTRUN_ID_TOKEN}, or null: no identity token
 */
public record Submission(
        String owner,
        String command,
        String image,
        String workdir,
        Map<String, String> env,
        Map<String, String> labels,
        long timeoutMs,
        int maxOutputBytes,
        int maxAttempts,
        String idempotencyKey,
        RunInputs inputs,
        StdinMode stdin,
        Resources resources,
        Instant startAt,
        Long delayMs,
        Retry retry,
        String webhook,
        Lineage lineage,
        String identityAudience) {

    public Submission {
        inputs = inputs == null ? RunInputs.NONE : inputs;
        stdin = stdin == null ? StdinMode.NONE : stdin;
        resources = resources == null ? Resources.NONE : resources;
        lineage = lineage == null ? Lineage.ROOT : lineage;
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(command, "command");
        env = env == null ? Map.of() : Map.copyOf(env);
        labels = labels == null ? Map.of() : Map.copyOf(labels);
    }

    /** A submission with the default limits, for tools and tests. */
    public static Submission of(String owner, String command) {
        return builder().owner(owner).command(command).timeoutMs(600_000L).maxOutputBytes(1 << 20).maxAttempts(3).build();
    }

    public Submission withTimeoutMs(long value) {
        return toBuilder().timeoutMs(value).build();
    }

    public Submission withMaxAttempts(int value) {
        return toBuilder().maxAttempts(value).build();
    }

    public Submission withIdempotencyKey(String value) {
        return toBuilder().idempotencyKey(value).build();
    }

    public Submission withInputs(RunInputs value) {
        return toBuilder().inputs(value).build();
    }

    public Submission withStdin(StdinMode value) {
        return toBuilder().stdin(value).build();
    }

    public Submission withMaxOutputBytes(int value) {
        return toBuilder().maxOutputBytes(value).build();
    }

    /** Starts no sooner than {@code at} (absolute) or {@code delay} after the insert; both null: at once. */
    public Submission withStart(Instant at, Long delay) {
        return toBuilder().startAt(at).delayMs(delay).build();
    }

    public Submission withRetry(Retry value) {
        return toBuilder().retry(value).build();
    }

    public Submission withLabels(Map<String, String> value) {
        return toBuilder().labels(value).build();
    }

    public Submission withWebhook(String value) {
        return toBuilder().webhook(value).build();
    }

    public Submission withResources(Resources value) {
        return toBuilder().resources(value).build();
    }

    public Submission withLineage(Lineage value) {
        return toBuilder().lineage(value).build();
    }

    public Submission withIdentityAudience(String value) {
        return toBuilder().identityAudience(value).build();
    }

    /** A builder with every component null, zero or false; null parts are their defaults (none, {@link RunInputs#NONE}, ...). */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding this submission's components, to change a few. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.owner = owner;
        b.command = command;
        b.image = image;
        b.workdir = workdir;
        b.env = env;
        b.labels = labels;
        b.timeoutMs = timeoutMs;
        b.maxOutputBytes = maxOutputBytes;
        b.maxAttempts = maxAttempts;
        b.idempotencyKey = idempotencyKey;
        b.inputs = inputs;
        b.stdin = stdin;
        b.resources = resources;
        b.startAt = startAt;
        b.delayMs = delayMs;
        b.retry = retry;
        b.webhook = webhook;
        b.lineage = lineage;
        b.identityAudience = identityAudience;
        return b;
    }

    /** Builds a {@link Submission} by naming its components. */
    public static final class Builder {
        private String owner;
        private String command;
        private String image;
        private String workdir;
        private Map<String, String> env;
        private Map<String, String> labels;
        private long timeoutMs;
        private int maxOutputBytes;
        private int maxAttempts;
        private String idempotencyKey;
        private RunInputs inputs;
        private StdinMode stdin;
        private Resources resources;
        private Instant startAt;
        private Long delayMs;
        private Retry retry;
        private String webhook;
        private Lineage lineage;
        private String identityAudience;

        private Builder() {
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

        public Builder maxAttempts(int value) {
            this.maxAttempts = value;
            return this;
        }

        public Builder idempotencyKey(String value) {
            this.idempotencyKey = value;
            return this;
        }

        public Builder inputs(RunInputs value) {
            this.inputs = value;
            return this;
        }

        public Builder stdin(StdinMode value) {
            this.stdin = value;
            return this;
        }

        public Builder resources(Resources value) {
            this.resources = value;
            return this;
        }

        public Builder startAt(Instant value) {
            this.startAt = value;
            return this;
        }

        public Builder delayMs(Long value) {
            this.delayMs = value;
            return this;
        }

        public Builder retry(Retry value) {
            this.retry = value;
            return this;
        }

        public Builder webhook(String value) {
            this.webhook = value;
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

        public Submission build() {
            return new Submission(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes,
                    maxAttempts, idempotencyKey, inputs, stdin, resources, startAt, delayMs, retry, webhook, lineage,
                    identityAudience);
        }
    }
}
