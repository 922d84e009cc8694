package io.outrun.api.http;

import io.outrun.core.config.ConfigException;
import io.outrun.core.execution.Resources;
import io.outrun.core.identity.IdentityConfig;
import io.outrun.core.secrets.SecretsKey;
import io.outrun.model.egress.EgressPolicy;
import io.outrun.model.inputs.Allowlist;
import java.util.List;

/**
 * What the HTTP API accepts and how it clamps it. Validated once at construction; a bad value
 * names its option (or says it has none). Each default is one constant below, used by the
 * {@code outrun api} and {@code outrun dev} options too. Clamping is silent for values above a maximum (the response shows the effective
 * value); values that make no sense (zero, negative, wrong type) are rejected.
 *
 * @param host              interface to listen on ({@code --bind}; default 0.0.0.0, dev 127.0.0.1)
 * @param port              TCP port ({@code --port}, default {@value #DEFAULT_PORT}; 0 picks a free one)
 * @param defaultTimeoutMs  timeout of a submission that names none (no option; default {@value #DEFAULT_TIMEOUT_MS})
 * @param maxTimeoutMs      largest timeout a caller gets ({@code --max-timeout-ms}, default {@value #DEFAULT_MAX_TIMEOUT_MS})
 * @param defaultOutputBytes bytes kept per stream when unspecified (no option; default {@value #DEFAULT_OUTPUT_BYTES})
 * @param maxOutputBytes    largest {@code maxOutputBytes} a caller gets ({@code --max-output-bytes}, default
 *                          {@value #DEFAULT_MAX_OUTPUT_BYTES})
 * @param maxWaitMs         longest a request may wait or long-poll (no option; default {@value #DEFAULT_MAX_WAIT_MS})
 * @param maxBodyBytes      largest request body; larger answers 413 ({@code --max-body-bytes}, default {@value #DEFAULT_MAX_BODY_BYTES})
 * @param maxAttempts       attempts before a lost execution fails ({@code --max-attempts}, default {@value #DEFAULT_MAX_ATTEMPTS})
 * @param envAllowlist      env names callers may set: exact names or {@code PREFIX_*}; {@code *} allows all
 *                          ({@code --env-allow}, default {@value #DEFAULT_ENV_ALLOW_TEXT})
 * @param maxLabels         labels per execution (no option; default {@value #DEFAULT_MAX_LABELS}; keys ≤ 64, values ≤ 256 characters)
 * @param maxWaiters        requests waiting at once on this node; more answer at once instead of waiting (no option;
 *                          default {@value #DEFAULT_MAX_WAITERS})
 * @param imageAllowlist    images a submission may name in {@code image}: exact, {@code PREFIX*} or {@code *}
 *                          ({@code --image-allow}); a submission naming another answers 400 at once instead of
 *                          failing on a worker. Should match the workers' {@code --image} and {@code --image-allow};
 *                          default {@code outrun-sandbox:latest}, the workers' default image
 * @param maxResources      the most a submission's {@code memoryMb}, {@code cpus}, {@code pids} and {@code tmpfsMb} get
 *                          ({@code --max-memory-mb}, {@code --max-cpus}, {@code --max-pids}, {@code --max-tmpfs-mb});
 *                          above it they are clamped, and the answer shows what the run gets
 * @param egress            hosts a run with {@code "network": "egress"} may reach ({@code --egress-allow}; empty:
 *                          such a submission is refused, naming the option). The workers enforce their own list
 * @param secretsKey        the operator's key sealing secrets ({@code --secrets-key-file}, {@code OUTRUN_SECRETS_KEY});
 *                          null: secrets cannot be set (listed and deleted they can), and runs naming one fail
 * @param webhooks          where completion webhooks may be sent ({@code --webhook-allow}; empty: submissions
 *                          with a webhook are refused)
 * @param identity          run identities: the public URL (issuer), the default audience, how deep children nest
 * @param maxBatchBodyBytes largest body of a batch of submissions ({@code POST /v1/executions/batch}); larger answers
 *                          413 ({@code --max-batch-body-bytes}, default {@value #DEFAULT_MAX_BATCH_BODY_BYTES}); each
 *                          submission in it is also held to the single submit's limits
 */
public record ApiConfig(
        String host,
        int port,
        long defaultTimeoutMs,
        long maxTimeoutMs,
        int defaultOutputBytes,
        int maxOutputBytes,
        long maxWaitMs,
        int maxBodyBytes,
        int maxAttempts,
        List<String> envAllowlist,
        int maxLabels,
        int maxWaiters,
        List<String> imageAllowlist,
        Resources maxResources,
        EgressPolicy egress,
        SecretsKey secretsKey,
        EgressPolicy webhooks,
        IdentityConfig identity,
        int maxBatchBodyBytes) {

    public static final int DEFAULT_PORT = 8080;
    public static final long DEFAULT_TIMEOUT_MS = 600_000;
    public static final long DEFAULT_MAX_TIMEOUT_MS = 3_600_000;
    public static final int DEFAULT_OUTPUT_BYTES = 1 << 20;
    public static final int DEFAULT_MAX_OUTPUT_BYTES = 8 << 20;
    public static final long DEFAULT_MAX_WAIT_MS = 30_000;
    public static final int DEFAULT_MAX_BODY_BYTES = 2 << 20;
    public static final int DEFAULT_MAX_BATCH_BODY_BYTES = 32 << 20;
    public static final int DEFAULT_MAX_ATTEMPTS = 3;
    public static final int DEFAULT_MAX_LABELS = 16;
    public static final int DEFAULT_MAX_WAITERS = 200;
    // The maxima default to the workers' own defaults (--memory-mb 512, --cpus 1, --pids 256,
    // --tmpfs-mb 256): a caller may ask for less, and for more only once the operator allows it,
    // so nodes sized as slots × their limits are not oversubscribed by an upgrade.
    public static final int DEFAULT_MAX_MEMORY_MB = 512;
    public static final double DEFAULT_MAX_CPUS = 1;
    public static final int DEFAULT_MAX_PIDS = 256;
    public static final int DEFAULT_MAX_TMPFS_MB = 256;
    public static final Resources DEFAULT_MAX_RESOURCES = new Resources(
            DEFAULT_MAX_MEMORY_MB, (int) (DEFAULT_MAX_CPUS * 1000), DEFAULT_MAX_PIDS, DEFAULT_MAX_TMPFS_MB);

    /** Variables that change how tools print, never what they can reach (as {@code --env-allow} takes them). */
    public static final String DEFAULT_ENV_ALLOW_TEXT = "LANG,LC_*,TZ,TERM,NO_COLOR,PAGER,CI,DEBUG";
    public static final List<String> DEFAULT_ENV_ALLOWLIST = List.of(DEFAULT_ENV_ALLOW_TEXT.split(","));

    /** The workers' default image (sandbox/image/build.sh builds it). */
    public static final List<String> DEFAULT_IMAGE_ALLOWLIST = List.of("outrun-sandbox:latest");

    public ApiConfig {
        identity = identity == null ? IdentityConfig.DEFAULTS : identity;
        if (port < 0 || port > 65535) {
            throw new ConfigException("--port must be a TCP port (0 for any free one), got: " + port);
        }
        if (host == null || host.isBlank()) {
            throw new ConfigException("--bind must name an interface, e.g. 127.0.0.1 or 0.0.0.0");
        }
        if (maxTimeoutMs < 1000) {
            throw new ConfigException("--max-timeout-ms must be at least 1000, got: " + maxTimeoutMs);
        }
        if (defaultTimeoutMs < 1 || defaultTimeoutMs > maxTimeoutMs) {
            throw new ConfigException("the default timeout must be between 1 ms and --max-timeout-ms (" + maxTimeoutMs
                    + "), got: " + defaultTimeoutMs);
        }
        if (maxOutputBytes < 1024 || maxOutputBytes > (64 << 20)) {
            throw new ConfigException("--max-output-bytes must be between 1024 and 64 MiB, got: " + maxOutputBytes);
        }
        if (defaultOutputBytes < 2 || defaultOutputBytes > maxOutputBytes) {
            throw new ConfigException("the default output bytes must be between 2 and --max-output-bytes, got: "
                    + defaultOutputBytes);
        }
        if (maxWaitMs < 0 || maxWaitMs > 120_000) {
            throw new ConfigException("the longest wait (no option) must be between 0 and 120000 ms, got: " + maxWaitMs);
        }
        if (maxBodyBytes < 1024 || maxBodyBytes > (64 << 20)) {
            throw new ConfigException("--max-body-bytes must be between 1024 and 64 MiB, got: " + maxBodyBytes);
        }
        if (maxBatchBodyBytes < 1024 || maxBatchBodyBytes > (256 << 20)) {
            throw new ConfigException("--max-batch-body-bytes must be between 1024 and 256 MiB, got: " + maxBatchBodyBytes);
        }
        if (maxAttempts < 1 || maxAttempts > 20) {
            throw new ConfigException("--max-attempts must be between 1 and 20, got: " + maxAttempts);
        }
        envAllowlist = List.copyOf(envAllowlist == null ? List.of() : envAllowlist);
        for (String entry : envAllowlist) {
            if (!entry.equals("*") && !entry.matches("[A-Za-z_][A-Za-z0-9_]*\\*?")) {
                throw new ConfigException("--env-allow entries are NAME, PREFIX* or *, got: " + entry);
            }
        }
        if (maxLabels < 0 || maxLabels > 100) {
            throw new ConfigException("the label limit (no option) must be between 0 and 100, got: " + maxLabels);
        }
        imageAllowlist = List.copyOf(imageAllowlist == null ? DEFAULT_IMAGE_ALLOWLIST : imageAllowlist);
        for (String entry : imageAllowlist) {
            if (entry.isBlank() || entry.chars().anyMatch(c -> c <= 0x20 || c >= 0x7f)) {
                throw new ConfigException("--image-allow entries are image names, PREFIX* or *, got: '" + entry + "'");
            }
        }
        if (maxWaiters < 0) {
            throw new ConfigException("the limit of waiting requests (no option) must be 0 or more, got: " + maxWaiters);
        }
        maxResources = maxResources == null ? DEFAULT_MAX_RESOURCES : maxResources;
        egress = egress == null ? EgressPolicy.NONE : egress;
        webhooks = webhooks == null ? EgressPolicy.NONE_WEBHOOKS : webhooks;
        atLeast("--max-memory-mb", maxResources.memoryMb(), Resources.MIN_MEMORY_MB);
        atLeast("--max-cpus (in thousandths)", maxResources.cpuMillis(), Resources.MIN_CPU_MILLIS);
        atLeast("--max-pids", maxResources.pids(), Resources.MIN_PIDS);
        atLeast("--max-tmpfs-mb", maxResources.tmpfsMb(), Resources.MIN_TMPFS_MB);
    }

    private static void atLeast(String option, Integer value, int min) {
        if (value == null || value < min) {
            throw new ConfigException(option + " must be at least " + min + ", got: " + value);
        }
    }

    /** The defaults, listening on {@code host:port}. */
    public static ApiConfig defaults(String host, int port) {
        return new ApiConfig(host, port, DEFAULT_TIMEOUT_MS, DEFAULT_MAX_TIMEOUT_MS, DEFAULT_OUTPUT_BYTES,
                DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_WAIT_MS, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_ATTEMPTS,
                DEFAULT_ENV_ALLOWLIST, DEFAULT_MAX_LABELS, DEFAULT_MAX_WAITERS, DEFAULT_IMAGE_ALLOWLIST, DEFAULT_MAX_RESOURCES, null, null, null,
                IdentityConfig.DEFAULTS, DEFAULT_MAX_BATCH_BODY_BYTES);
    }

    public ApiConfig withMaxTimeoutMs(long value) {
        return new ApiConfig(host, port, Math.min(defaultTimeoutMs, value), value, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist, maxResources, egress, secretsKey, webhooks, identity, maxBatchBodyBytes);
    }

    public ApiConfig withMaxOutputBytes(int value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, Math.min(defaultOutputBytes, value), value,
                maxWaitMs, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist, maxResources, egress, secretsKey, webhooks, identity, maxBatchBodyBytes);
    }

    public ApiConfig withMaxBodyBytes(int value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, value, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist, maxResources, egress, secretsKey, webhooks, identity, maxBatchBodyBytes);
    }

    public ApiConfig withEnvAllowlist(List<String> value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, maxAttempts, value, maxLabels, maxWaiters, imageAllowlist, maxResources, egress, secretsKey, webhooks, identity, maxBatchBodyBytes);
    }

    public ApiConfig withMaxWaitMs(long value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                value, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist, maxResources, egress, secretsKey, webhooks, identity, maxBatchBodyBytes);
    }

    public ApiConfig withMaxAttempts(int value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, value, envAllowlist, maxLabels, maxWaiters, imageAllowlist, maxResources, egress, secretsKey, webhooks, identity, maxBatchBodyBytes);
    }

    public ApiConfig withImageAllowlist(List<String> value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, value, maxResources, egress, secretsKey, webhooks, identity, maxBatchBodyBytes);
    }

    public ApiConfig withMaxResources(Resources value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist, value, egress, secretsKey, webhooks, identity, maxBatchBodyBytes);
    }

    public ApiConfig withEgress(EgressPolicy value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist, maxResources, value, secretsKey, webhooks, identity, maxBatchBodyBytes);
    }

    public ApiConfig withSecretsKey(SecretsKey value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist, maxResources, egress,
                value, webhooks, identity, maxBatchBodyBytes);
    }

    /** Where completion webhooks may be sent ({@code --webhook-allow}). */
    public ApiConfig withWebhooks(EgressPolicy value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist, maxResources, egress,
                secretsKey, value, identity, maxBatchBodyBytes);
    }

    /** Run identities' settings ({@code --public-url}, {@code --identity-audience}, {@code --max-child-depth}). */
    public ApiConfig withIdentity(IdentityConfig value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist, maxResources, egress,
                secretsKey, webhooks, value, maxBatchBodyBytes);
    }

    /** The largest body of a batch of submissions ({@code --max-batch-body-bytes}). */
    public ApiConfig withMaxBatchBodyBytes(int value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist, maxResources, egress,
                secretsKey, webhooks, identity, value);
    }

    /** Whether a submission may name {@code image}. */
    public boolean imageAllowed(String image) {
        return Allowlist.allows(imageAllowlist, image);
    }

    /** Whether a caller may set the environment variable {@code name}. */
    public boolean envAllowed(String name) {
        return Allowlist.allows(envAllowlist, name);
    }

    /** For error messages: what may be set. */
    public String envAllowlistText() {
        return envAllowlist.isEmpty() ? "(none: this server allows no env)" : String.join(", ", envAllowlist);
    }
}
