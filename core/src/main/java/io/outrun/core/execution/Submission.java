package io.outrun.core.execution;

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
        io.outrun.model.inputs.StdinMode stdin,
        Resources resources,
        java.time.Instant startAt,
        Long delayMs,
        Retry retry,
        String webhook,
        Lineage lineage,
        String identityAudience) {

    public Submission(String owner, String command, String image, String workdir, Map<String, String> env,
                      Map<String, String> labels, long timeoutMs, int maxOutputBytes, int maxAttempts,
                      String idempotencyKey, RunInputs inputs, io.outrun.model.inputs.StdinMode stdin, Resources resources,
                      java.time.Instant startAt, Long delayMs, Retry retry, String webhook) {
        this(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts, idempotencyKey, inputs,
                stdin, resources, startAt, delayMs, retry, webhook, null, null);
    }


    public Submission(String owner, String command, String image, String workdir, Map<String, String> env,
                      Map<String, String> labels, long timeoutMs, int maxOutputBytes, int maxAttempts,
                      String idempotencyKey, RunInputs inputs, io.outrun.model.inputs.StdinMode stdin, Resources resources,
                      java.time.Instant startAt, Long delayMs) {
        this(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts, idempotencyKey, inputs,
                stdin, resources, startAt, delayMs, null, null);
    }

    public Submission(String owner, String command, String image, String workdir, Map<String, String> env,
                      Map<String, String> labels, long timeoutMs, int maxOutputBytes, int maxAttempts,
                      String idempotencyKey, RunInputs inputs, io.outrun.model.inputs.StdinMode stdin, Resources resources) {
        this(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts, idempotencyKey, inputs,
                stdin, resources, null, null, null, null);
    }

    public Submission(String owner, String command, String image, String workdir, Map<String, String> env,
                      Map<String, String> labels, long timeoutMs, int maxOutputBytes, int maxAttempts,
                      String idempotencyKey, RunInputs inputs, io.outrun.model.inputs.StdinMode stdin) {
        this(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts, idempotencyKey, inputs,
                stdin, null);
    }

    public Submission(String owner, String command, String image, String workdir, Map<String, String> env,
                      Map<String, String> labels, long timeoutMs, int maxOutputBytes, int maxAttempts,
                      String idempotencyKey, RunInputs inputs) {
        this(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts, idempotencyKey, inputs, null);
    }

    public Submission(String owner, String command, String image, String workdir, Map<String, String> env,
                      Map<String, String> labels, long timeoutMs, int maxOutputBytes, int maxAttempts,
                      String idempotencyKey) {
        this(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts, idempotencyKey, null);
    }

    public Submission {
        inputs = inputs == null ? RunInputs.NONE : inputs;
        stdin = stdin == null ? io.outrun.model.inputs.StdinMode.NONE : stdin;
        resources = resources == null ? Resources.NONE : resources;
        lineage = lineage == null ? Lineage.ROOT : lineage;
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(command, "command");
        env = env == null ? Map.of() : Map.copyOf(env);
        labels = labels == null ? Map.of() : Map.copyOf(labels);
    }

    /** A submission with the default limits, for tools and tests. */
    public static Submission of(String owner, String command) {
        return new Submission(owner, command, null, null, Map.of(), Map.of(), 600_000L, 1 << 20, 3, null);
    }

    public Submission withTimeoutMs(long value) {
        return new Submission(owner, command, image, workdir, env, labels, value, maxOutputBytes, maxAttempts, idempotencyKey, inputs, stdin, resources, startAt, delayMs, retry, webhook, lineage, identityAudience);
    }

    public Submission withMaxAttempts(int value) {
        return new Submission(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, value, idempotencyKey, inputs, stdin, resources, startAt, delayMs, retry, webhook, lineage, identityAudience);
    }

    public Submission withIdempotencyKey(String value) {
        return new Submission(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts, value, inputs, stdin, resources, startAt, delayMs, retry, webhook, lineage, identityAudience);
    }

    public Submission withInputs(RunInputs value) {
        return new Submission(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts,
                idempotencyKey, value, stdin, resources, startAt, delayMs, retry, webhook, lineage, identityAudience);
    }

    public Submission withStdin(io.outrun.model.inputs.StdinMode value) {
        return new Submission(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts,
                idempotencyKey, inputs, value, resources, startAt, delayMs, retry, webhook, lineage, identityAudience);
    }

    public Submission withMaxOutputBytes(int value) {
        return new Submission(owner, command, image, workdir, env, labels, timeoutMs, value, maxAttempts, idempotencyKey, inputs, stdin, resources, startAt, delayMs, retry, webhook, lineage, identityAudience);
    }

    /** Starts no sooner than {@code at} (absolute) or {@code delay} after the insert; both null: at once. */
    public Submission withStart(java.time.Instant at, Long delay) {
        return new Submission(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts,
                idempotencyKey, inputs, stdin, resources, at, delay, retry, webhook, lineage, identityAudience);
    }

    public Submission withRetry(Retry value) {
        return new Submission(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts,
                idempotencyKey, inputs, stdin, resources, startAt, delayMs, value, webhook, lineage, identityAudience);
    }

    public Submission withLabels(Map<String, String> value) {
        return new Submission(owner, command, image, workdir, env, value, timeoutMs, maxOutputBytes, maxAttempts,
                idempotencyKey, inputs, stdin, resources, startAt, delayMs, retry, webhook, lineage, identityAudience);
    }

    public Submission withWebhook(String value) {
        return new Submission(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts,
                idempotencyKey, inputs, stdin, resources, startAt, delayMs, retry, value, lineage, identityAudience);
    }

    public Submission withResources(Resources value) {
        return new Submission(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts,
                idempotencyKey, inputs, stdin, value, startAt, delayMs, retry, webhook, lineage, identityAudience);
    }

    public Submission withLineage(Lineage value) {
        return new Submission(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts,
                idempotencyKey, inputs, stdin, resources, startAt, delayMs, retry, webhook, value, identityAudience);
    }

    public Submission withIdentityAudience(String value) {
        return new Submission(owner, command, image, workdir, env, labels, timeoutMs, maxOutputBytes, maxAttempts,
                idempotencyKey, inputs, stdin, resources, startAt, delayMs, retry, webhook, lineage, value);
    }
}
