package io.outrun.client.wire;

import java.time.Instant;
import java.util.List;
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
        List<InputFileSpec> files,
        List<String> artifacts,
        String workspace,
        Boolean stdin,
        Boolean tty,
        Integer memoryMb,
        Double cpus,
        Integer pids,
        Integer tmpfsMb,
        String network,
        List<String> secrets,
        Long delayMs,
        String startAt,
        RetrySpec retry,
        String webhook,
        IdentityView identity,
        Boolean cancelWithParent) {

    /** {@code "retry"}: retries after a failure, the first one's wait (doubled each time), and which failures. */
    public record RetrySpec(int maxRetries, Long backoffMs, List<String> on) {
    }

    /** The fields of the first API version and the inputs; kept for callers written against them (see {@link #builder}). */
    public SubmitRequest(String command, Long timeoutMs, Long maxOutputBytes, Long waitMs, String image,
                         Map<String, String> env, String workdir, Map<String, String> labels, Integer maxAttempts,
                         String waitFor, List<InputFileSpec> files, List<String> artifacts,
                         String workspace) {
        this(builder().command(command).timeoutMs(timeoutMs).maxOutputBytes(maxOutputBytes).waitMs(waitMs).image(image)
                .env(env).workdir(workdir).labels(labels).maxAttempts(maxAttempts).waitFor(waitFor).files(files)
                .artifacts(artifacts).workspace(workspace));
    }

    /** The fields of the first API version; kept for callers written against them (see {@link #builder}). */
    public SubmitRequest(String command, Long timeoutMs, Long maxOutputBytes, Long waitMs, String image,
                         Map<String, String> env, String workdir, Map<String, String> labels, Integer maxAttempts,
                         String waitFor) {
        this(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, labels, maxAttempts, waitFor, null, null,
                null);
    }

    private SubmitRequest(Builder b) {
        this(b.command, b.timeoutMs, b.maxOutputBytes, b.waitMs, b.image, b.env, b.workdir, b.labels, b.maxAttempts,
                b.waitFor, b.files, b.artifacts, b.workspace, b.stdin, b.tty, b.memoryMb, b.cpus, b.pids, b.tmpfsMb,
                b.network, b.secrets, b.delayMs, b.startAt, b.retry, b.webhook, b.identity, b.cancelWithParent);
    }

    /** A request to run {@code command} with the server's defaults; the {@code with} methods add the rest. */
    public static SubmitRequest of(String command) {
        return builder().command(command).build();
    }

    public SubmitRequest withTimeoutMs(Long value) {
        return toBuilder().timeoutMs(value).build();
    }

    public SubmitRequest withMaxOutputBytes(Long value) {
        return toBuilder().maxOutputBytes(value).build();
    }

    public SubmitRequest withWaitMs(Long value) {
        return toBuilder().waitMs(value).build();
    }

    public SubmitRequest withImage(String value) {
        return toBuilder().image(value).build();
    }

    public SubmitRequest withEnv(Map<String, String> value) {
        return toBuilder().env(value).build();
    }

    public SubmitRequest withWorkdir(String value) {
        return toBuilder().workdir(value).build();
    }

    public SubmitRequest withLabels(Map<String, String> value) {
        return toBuilder().labels(value).build();
    }

    public SubmitRequest withMaxAttempts(Integer value) {
        return toBuilder().maxAttempts(value).build();
    }

    public SubmitRequest withFiles(List<InputFileSpec> value) {
        return toBuilder().files(value).build();
    }

    public SubmitRequest withArtifacts(List<String> value) {
        return toBuilder().artifacts(value).build();
    }

    public SubmitRequest withWorkspace(String value) {
        return toBuilder().workspace(value).build();
    }

    /** Keeps the command's stdin open for writes ({@code POST …/stdin}). */
    public SubmitRequest withStdin(boolean value) {
        return toBuilder().stdin(value ? Boolean.TRUE : null).build();
    }

    /** Gives the command a pseudo-terminal (stdin open too). */
    public SubmitRequest withTty(boolean value) {
        return toBuilder().tty(value ? Boolean.TRUE : null).build();
    }

    /** {@code "end"} or {@code "output"}; see the record's doc. */
    public SubmitRequest withWaitFor(String value) {
        return toBuilder().waitFor(value).build();
    }

    /** Asks the run's sandbox for these resources (each null: the node's default); the server clamps them. */
    public SubmitRequest withResources(Integer memoryMbValue, Double cpusValue, Integer pidsValue, Integer tmpfsMbValue) {
        return toBuilder().memoryMb(memoryMbValue).cpus(cpusValue).pids(pidsValue).tmpfsMb(tmpfsMbValue).build();
    }

    /** {@code "egress"}: the run goes out through its node's proxy, to the hosts the operator allows. */
    public SubmitRequest withNetwork(String value) {
        return toBuilder().network(value).build();
    }

    /** Names of the owner's secrets the run gets as environment variables. */
    public SubmitRequest withSecrets(List<String> value) {
        return toBuilder().secrets(value).build();
    }

    /** Starts no sooner than {@code ms} after the submit. */
    public SubmitRequest withDelayMs(Long ms) {
        return toBuilder().delayMs(ms).startAt(null).build();
    }

    /** Starts no sooner than {@code at}. */
    public SubmitRequest withStartAt(Instant at) {
        return toBuilder().delayMs(null).startAt(at == null ? null : at.toString()).build();
    }

    /** Runs a failed command again, up to {@code maxRetries} times (see {@link RetrySpec}). */
    public SubmitRequest withRetry(RetrySpec value) {
        return toBuilder().retry(value).build();
    }

    /** POSTs the execution's end to {@code url}, signed with the owner's webhook secret. */
    public SubmitRequest withWebhook(String url) {
        return toBuilder().webhook(url).build();
    }

    /**
     * Gives the run an identity token ({@code OUTRUN_ID_TOKEN}) for {@code audience}; null asks
     * for the server's default audience.
     */
    public SubmitRequest withIdentity(String audience) {
        return toBuilder().identity(new IdentityView(audience)).build();
    }

    /**
     * For a child submitted from inside a run: false lets it outlive its parent (null: the
     * server's default, true).
     */
    public SubmitRequest withCancelWithParent(Boolean value) {
        return toBuilder().cancelWithParent(value).build();
    }

    /** A builder with every component null, zero or false; each null field is the server's default. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding this submitRequest's components, to change a few. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.command = command;
        b.timeoutMs = timeoutMs;
        b.maxOutputBytes = maxOutputBytes;
        b.waitMs = waitMs;
        b.image = image;
        b.env = env;
        b.workdir = workdir;
        b.labels = labels;
        b.maxAttempts = maxAttempts;
        b.waitFor = waitFor;
        b.files = files;
        b.artifacts = artifacts;
        b.workspace = workspace;
        b.stdin = stdin;
        b.tty = tty;
        b.memoryMb = memoryMb;
        b.cpus = cpus;
        b.pids = pids;
        b.tmpfsMb = tmpfsMb;
        b.network = network;
        b.secrets = secrets;
        b.delayMs = delayMs;
        b.startAt = startAt;
        b.retry = retry;
        b.webhook = webhook;
        b.identity = identity;
        b.cancelWithParent = cancelWithParent;
        return b;
    }

    /** Builds a {@link SubmitRequest} by naming its components. */
    public static final class Builder {
        private String command;
        private Long timeoutMs;
        private Long maxOutputBytes;
        private Long waitMs;
        private String image;
        private Map<String, String> env;
        private String workdir;
        private Map<String, String> labels;
        private Integer maxAttempts;
        private String waitFor;
        private List<InputFileSpec> files;
        private List<String> artifacts;
        private String workspace;
        private Boolean stdin;
        private Boolean tty;
        private Integer memoryMb;
        private Double cpus;
        private Integer pids;
        private Integer tmpfsMb;
        private String network;
        private List<String> secrets;
        private Long delayMs;
        private String startAt;
        private RetrySpec retry;
        private String webhook;
        private IdentityView identity;
        private Boolean cancelWithParent;

        private Builder() {
        }

        public Builder command(String value) {
            this.command = value;
            return this;
        }

        public Builder timeoutMs(Long value) {
            this.timeoutMs = value;
            return this;
        }

        public Builder maxOutputBytes(Long value) {
            this.maxOutputBytes = value;
            return this;
        }

        public Builder waitMs(Long value) {
            this.waitMs = value;
            return this;
        }

        public Builder image(String value) {
            this.image = value;
            return this;
        }

        public Builder env(Map<String, String> value) {
            this.env = value;
            return this;
        }

        public Builder workdir(String value) {
            this.workdir = value;
            return this;
        }

        public Builder labels(Map<String, String> value) {
            this.labels = value;
            return this;
        }

        public Builder maxAttempts(Integer value) {
            this.maxAttempts = value;
            return this;
        }

        public Builder waitFor(String value) {
            this.waitFor = value;
            return this;
        }

        public Builder files(List<InputFileSpec> value) {
            this.files = value;
            return this;
        }

        public Builder artifacts(List<String> value) {
            this.artifacts = value;
            return this;
        }

        public Builder workspace(String value) {
            this.workspace = value;
            return this;
        }

        public Builder stdin(Boolean value) {
            this.stdin = value;
            return this;
        }

        public Builder tty(Boolean value) {
            this.tty = value;
            return this;
        }

        public Builder memoryMb(Integer value) {
            this.memoryMb = value;
            return this;
        }

        public Builder cpus(Double value) {
            this.cpus = value;
            return this;
        }

        public Builder pids(Integer value) {
            this.pids = value;
            return this;
        }

        public Builder tmpfsMb(Integer value) {
            this.tmpfsMb = value;
            return this;
        }

        public Builder network(String value) {
            this.network = value;
            return this;
        }

        public Builder secrets(List<String> value) {
            this.secrets = value;
            return this;
        }

        public Builder delayMs(Long value) {
            this.delayMs = value;
            return this;
        }

        public Builder startAt(String value) {
            this.startAt = value;
            return this;
        }

        public Builder retry(RetrySpec value) {
            this.retry = value;
            return this;
        }

        public Builder webhook(String value) {
            this.webhook = value;
            return this;
        }

        public Builder identity(IdentityView value) {
            this.identity = value;
            return this;
        }

        public Builder cancelWithParent(Boolean value) {
            this.cancelWithParent = value;
            return this;
        }

        public SubmitRequest build() {
            return new SubmitRequest(this);
        }
    }
}
