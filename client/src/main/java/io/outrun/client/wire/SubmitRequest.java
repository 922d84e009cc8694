package io.outrun.client.wire;

import java.util.Map;

/**
 * The body of {@code POST /v1/executions}. Only {@code command} is required; every limit is
 * clamped by the server, which answers with the effective values.
 *
 * @param command        bash source to run
 * @param timeoutMs      wall-clock limit (default 10 min, clamped to the server's maximum)
 * @param maxOutputBytes bytes kept per stream, head plus tail (default 1 MiB, clamped)
 * @param waitMs         wait up to this long before answering (clamped to 30 s)
 * @param image          container image (docker sandbox), or null for the node's default
 * @param env            environment; names must be on the server's allowlist
 * @param workdir        absolute working directory, or null for the sandbox's default
 * @param labels         free-form key/value labels for the owner's bookkeeping
 * @param maxAttempts    attempts allowed when a worker is lost mid-run; 1 = never run it again
 *                       (default and maximum: the server's, 3 unless configured)
 * @param waitFor        what {@code waitMs} waits for: {@code end} (default) or {@code output}, which
 *                       answers as soon as the command printed anything (or ended)
 * @param files          input files written into the workdir before the command starts
 * @param artifacts      paths or globs relative to the workdir collected after the command ends
 * @param workspace      the owner's workspace restored before the run and saved after it
 * @param stdin          true: the command's stdin stays open for {@code POST …/stdin} (else /dev/null)
 * @param tty            true: the command gets a pseudo-terminal (stdin open too)
 * @param memoryMb       memory limit in MiB (container runs; clamped to the server's maximum), or null for the node's default
 * @param cpus           CPUs, a fraction allowed (clamped), or null
 * @param pids           most processes at once (clamped), or null
 * @param tmpfsMb        size of the workdir and of /tmp in MiB (clamped), or null
 * @param network        {@code "egress"}: out through the node's proxy to the operator's allowlist; null: no network
 * @param secrets        names of the owner's secrets ({@code PUT /v1/secrets/{name}}) the run gets as env,
 *                       masked as {@code [secret:NAME]} in its output; null: none
 * @param delayMs        start no sooner than this many ms after the submit (at most 30 days); null: at once
 * @param startAt        start no sooner than this ISO-8601 instant; null: at once (not with delayMs)
 * @param retry          run a failed command again ({@link RetrySpec}); null: never
 * @param webhook        where to POST the end, signed (Standard Webhooks); needs {@code POST /v1/webhook-secret} first
 * @param identity       the run gets {@code OUTRUN_ID_TOKEN}, a JWT for {@code identity.audience} (null audience:
 *                       the server's default); null: no identity token
 * @param cancelWithParent only for a child (submitted by a run with its run token): whether it is cancelled
 *                       with its parent (null: true)
 */
public record SubmitRequest(
        String command,
        Long timeoutMs,
        Long maxOutputBytes,
        Long waitMs,
        String image,
        Map<String, String> env,
        String workdir,
        Map<String, String> labels,
        Integer maxAttempts,
        String waitFor,
        java.util.List<InputFileSpec> files,
        java.util.List<String> artifacts,
        String workspace,
        Boolean stdin,
        Boolean tty,
        Integer memoryMb,
        Double cpus,
        Integer pids,
        Integer tmpfsMb,
        String network,
        java.util.List<String> secrets,
        Long delayMs,
        String startAt,
        RetrySpec retry,
        String webhook,
        IdentityView identity,
        Boolean cancelWithParent) {

    /** {@code "retry"}: retries after a failure, the first one's wait (doubled each time), and which failures. */
    public record RetrySpec(int maxRetries, Long backoffMs, java.util.List<String> on) {
    }

    public SubmitRequest(String command, Long timeoutMs, Long maxOutputBytes, Long waitMs, String image,
                         Map<String, String> env, String workdir, Map<String, String> labels, Integer maxAttempts,
                         String waitFor, java.util.List<InputFileSpec> files, java.util.List<String> artifacts,
                         String workspace) {
        this(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts, waitFor, files, artifacts,
                workspace, null, null, null, null, null, null, null, null, null, null, null, null, null, null);
    }

    public SubmitRequest(String command, Long timeoutMs, Long maxOutputBytes, Long waitMs, String image,
                         Map<String, String> env, String workdir, Map<String, String> labels, Integer maxAttempts,
                         String waitFor) {
        this(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts, waitFor, null, null,
                null);
    }

    public static SubmitRequest of(String command) {
        return new SubmitRequest(command, null, null, null, null, null, null, null, null, null);
    }

    public SubmitRequest withTimeoutMs(Long value) {
        return new SubmitRequest(command, value, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts, waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    public SubmitRequest withMaxOutputBytes(Long value) {
        return new SubmitRequest(command, timeoutMs, value, waitMs, image, env, workdir, labels, maxAttempts, waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    public SubmitRequest withWaitMs(Long value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, value, image, env, workdir, labels, maxAttempts, waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    public SubmitRequest withImage(String value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, value, env, workdir, labels, maxAttempts, waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    public SubmitRequest withEnv(Map<String, String> value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, value, workdir, labels, maxAttempts, waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    public SubmitRequest withWorkdir(String value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, value, labels, maxAttempts, waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    public SubmitRequest withLabels(Map<String, String> value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, value, maxAttempts, waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    public SubmitRequest withMaxAttempts(Integer value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, value, waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    public SubmitRequest withFiles(java.util.List<InputFileSpec> value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, value, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    public SubmitRequest withArtifacts(java.util.List<String> value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, value, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    public SubmitRequest withWorkspace(String value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, artifacts, value, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    /** Keeps the command's stdin open for writes ({@code POST …/stdin}). */
    public SubmitRequest withStdin(boolean value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, artifacts, workspace, value ? Boolean.TRUE : null, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    /** Gives the command a pseudo-terminal (stdin open too). */
    public SubmitRequest withTty(boolean value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, artifacts, workspace, stdin, value ? Boolean.TRUE : null, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    /** {@code "end"} or {@code "output"}; see the record's doc. */
    public SubmitRequest withWaitFor(String value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts, value, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    /** Asks the run's sandbox for these resources (each null: the node's default); the server clamps them. */
    public SubmitRequest withResources(Integer memoryMbValue, Double cpusValue, Integer pidsValue, Integer tmpfsMbValue) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, artifacts, workspace, stdin, tty, memoryMbValue, cpusValue, pidsValue, tmpfsMbValue, network, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    /** {@code "egress"}: the run goes out through its node's proxy, to the hosts the operator allows. */
    public SubmitRequest withNetwork(String value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, value, secrets, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    /** Names of the owner's secrets the run gets as environment variables. */
    public SubmitRequest withSecrets(java.util.List<String> value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, value, delayMs, startAt, retry, webhook, identity, cancelWithParent);
    }

    /** Starts no sooner than {@code ms} after the submit. */
    public SubmitRequest withDelayMs(Long ms) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, ms, null, retry, webhook, identity, cancelWithParent);
    }

    /** Starts no sooner than {@code at}. */
    public SubmitRequest withStartAt(java.time.Instant at) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, null,
                at == null ? null : at.toString(), retry, webhook, identity, cancelWithParent);
    }

    /** Runs a failed command again, up to {@code maxRetries} times (see {@link RetrySpec}). */
    public SubmitRequest withRetry(RetrySpec value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs,
                startAt, value, webhook, identity, cancelWithParent);
    }

    /** POSTs the execution's end to {@code url}, signed with the owner's webhook secret. */
    public SubmitRequest withWebhook(String url) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs,
                startAt, retry, url, identity, cancelWithParent);
    }

    /**
     * Gives the run an identity token ({@code OUTRUN_ID_TOKEN}) for {@code audience}; null asks
     * for the server's default audience.
     */
    public SubmitRequest withIdentity(String audience) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs,
                startAt, retry, webhook, new IdentityView(audience), cancelWithParent);
    }

    /**
     * For a child submitted from inside a run: false lets it outlive its parent (null: the
     * server's default, true).
     */
    public SubmitRequest withCancelWithParent(Boolean value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts,
                waitFor, files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs,
                startAt, retry, webhook, identity, value);
    }
}
