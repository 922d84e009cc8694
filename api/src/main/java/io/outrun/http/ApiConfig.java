package io.outrun.http;

import io.outrun.config.ConfigException;
import io.outrun.sandbox.Allowlist;
import java.util.List;

/**
 * What the HTTP API accepts and how it clamps it. Validated once at start; a bad value names
 * its option. Clamping is silent for values above a maximum (the response shows the effective
 * value); values that make no sense (zero, negative, wrong type) are rejected.
 *
 * @param host              interface to listen on ({@code --bind}; default 0.0.0.0, dev 127.0.0.1)
 * @param port              TCP port ({@code --port}; 0 picks a free one)
 * @param defaultTimeoutMs  timeout of a submission that names none (default 10 min)
 * @param maxTimeoutMs      largest timeout a caller gets ({@code --max-timeout-ms}, default 1 h)
 * @param defaultOutputBytes bytes kept per stream when unspecified (default 1 MiB)
 * @param maxOutputBytes    largest {@code maxOutputBytes} a caller gets ({@code --max-output-bytes}, default 8 MiB)
 * @param maxWaitMs         longest a request may wait or long-poll (default 30 s)
 * @param maxBodyBytes      largest request body; larger answers 413 ({@code --max-body-bytes}, default 2 MiB)
 * @param maxAttempts       attempts before a lost execution fails (default 3)
 * @param envAllowlist      env names callers may set: exact names or {@code PREFIX_*}; {@code *} allows all
 *                          ({@code --env-allow}, default {@link #DEFAULT_ENV_ALLOWLIST})
 * @param maxLabels         labels per execution (default 16; keys ≤ 64, values ≤ 256 characters)
 * @param maxWaiters        requests waiting at once on this node; more answer at once instead of waiting (default 200)
 * @param imageAllowlist    images a submission may name in {@code image}: exact, {@code PREFIX*} or {@code *}
 *                          ({@code --image-allow}); a submission naming another answers 400 at once instead of
 *                          failing on a worker. Should match the workers' {@code --image} and {@code --image-allow};
 *                          default {@code outrun-sandbox:latest}, the workers' default image
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
        List<String> imageAllowlist) {

    /** Variables that change how tools print, never what they can reach. */
    public static final List<String> DEFAULT_ENV_ALLOWLIST =
            List.of("LANG", "LC_*", "TZ", "TERM", "NO_COLOR", "PAGER", "CI", "DEBUG");

    /** The workers' default image (sandbox/image/build.sh builds it). */
    public static final List<String> DEFAULT_IMAGE_ALLOWLIST = List.of("outrun-sandbox:latest");

    public ApiConfig {
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
            throw new ConfigException("the maximum wait must be between 0 and 120000 ms, got: " + maxWaitMs);
        }
        if (maxBodyBytes < 1024 || maxBodyBytes > (64 << 20)) {
            throw new ConfigException("--max-body-bytes must be between 1024 and 64 MiB, got: " + maxBodyBytes);
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
            throw new ConfigException("--max-labels must be between 0 and 100, got: " + maxLabels);
        }
        imageAllowlist = List.copyOf(imageAllowlist == null ? DEFAULT_IMAGE_ALLOWLIST : imageAllowlist);
        for (String entry : imageAllowlist) {
            if (entry.isBlank() || entry.chars().anyMatch(c -> c <= 0x20 || c >= 0x7f)) {
                throw new ConfigException("--image-allow entries are image names, PREFIX* or *, got: '" + entry + "'");
            }
        }
        if (maxWaiters < 0) {
            throw new ConfigException("the maximum number of waiting requests must be 0 or more, got: " + maxWaiters);
        }
    }

    /** The defaults, listening on {@code host:port}. */
    public static ApiConfig defaults(String host, int port) {
        return new ApiConfig(host, port, 600_000L, 3_600_000L, 1 << 20, 8 << 20, 30_000L, 2 << 20, 3,
                DEFAULT_ENV_ALLOWLIST, 16, 200,
                DEFAULT_IMAGE_ALLOWLIST);
    }

    public ApiConfig withMaxTimeoutMs(long value) {
        return new ApiConfig(host, port, Math.min(defaultTimeoutMs, value), value, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist);
    }

    public ApiConfig withMaxOutputBytes(int value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, Math.min(defaultOutputBytes, value), value,
                maxWaitMs, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist);
    }

    public ApiConfig withMaxBodyBytes(int value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, value, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist);
    }

    public ApiConfig withEnvAllowlist(List<String> value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, maxAttempts, value, maxLabels, maxWaiters, imageAllowlist);
    }

    public ApiConfig withMaxWaitMs(long value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                value, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, imageAllowlist);
    }

    public ApiConfig withMaxAttempts(int value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, value, envAllowlist, maxLabels, maxWaiters, imageAllowlist);
    }

    public ApiConfig withImageAllowlist(List<String> value) {
        return new ApiConfig(host, port, defaultTimeoutMs, maxTimeoutMs, defaultOutputBytes, maxOutputBytes,
                maxWaitMs, maxBodyBytes, maxAttempts, envAllowlist, maxLabels, maxWaiters, value);
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
