package io.outrun.http.wire;

import java.util.Map;

/**
 * The body of {@code POST /v1/executions}. Only {@code command} is required; every limit is
 * clamped by the server, which answers with the effective values.
 *
 * @param command        bash source to run
 * @param timeoutMs      wall-clock limit (default 10 min, clamped to the server's maximum)
 * @param maxOutputBytes bytes kept per stream, head plus tail (default 1 MiB, clamped)
 * @param waitMs         wait up to this long for the end before answering (clamped to 30 s)
 * @param image          container image (docker sandbox), or null for the node's default
 * @param env            environment; names must be on the server's allowlist
 * @param workdir        absolute working directory, or null for the sandbox's default
 * @param labels         free-form key/value labels for the owner's bookkeeping
 */
public record SubmitRequest(
        String command,
        Long timeoutMs,
        Long maxOutputBytes,
        Long waitMs,
        String image,
        Map<String, String> env,
        String workdir,
        Map<String, String> labels) {

    public static SubmitRequest of(String command) {
        return new SubmitRequest(command, null, null, null, null, null, null, null);
    }

    public SubmitRequest withTimeoutMs(Long value) {
        return new SubmitRequest(command, value, maxOutputBytes, waitMs, image, env, workdir, labels);
    }

    public SubmitRequest withMaxOutputBytes(Long value) {
        return new SubmitRequest(command, timeoutMs, value, waitMs, image, env, workdir, labels);
    }

    public SubmitRequest withWaitMs(Long value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, value, image, env, workdir, labels);
    }

    public SubmitRequest withImage(String value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, value, env, workdir, labels);
    }

    public SubmitRequest withEnv(Map<String, String> value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, value, workdir, labels);
    }

    public SubmitRequest withWorkdir(String value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, value, labels);
    }

    public SubmitRequest withLabels(Map<String, String> value) {
        return new SubmitRequest(command, timeoutMs, maxOutputBytes, waitMs, image, env, workdir, value);
    }
}
