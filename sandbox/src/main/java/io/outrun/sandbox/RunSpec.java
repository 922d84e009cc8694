package io.outrun.sandbox;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * What to run and within which bounds. Values are already clamped by the caller.
 *
 * @param executionId    the execution this run belongs to (labels the container)
 * @param attempt        the attempt number (labels the container; stale attempts are removed)
 * @param nodeId         the node that runs it
 * @param command        bash source of any length; it never passes through an argv
 * @param image          container image, or null for the backend's default
 * @param workdir        working directory inside the sandbox, or null for the default
 * @param env            environment the execution asked for, already filtered by the allowlist
 * @param timeout        wall-clock limit; at the deadline the whole run is killed
 * @param maxOutputBytes bytes kept per stream (head plus tail)
 * @param limits         resource limits
 */
public record RunSpec(
        UUID executionId,
        int attempt,
        String nodeId,
        String command,
        String image,
        String workdir,
        Map<String, String> env,
        Duration timeout,
        int maxOutputBytes,
        Limits limits) {

    public RunSpec {
        Objects.requireNonNull(executionId, "executionId");
        Objects.requireNonNull(command, "command");
        Objects.requireNonNull(timeout, "timeout");
        env = env == null ? Map.of() : Map.copyOf(env);
        limits = limits == null ? Limits.DEFAULTS : limits;
        if (maxOutputBytes <= 0) {
            throw new IllegalArgumentException("maxOutputBytes must be positive: " + maxOutputBytes);
        }
    }

    /** A spec for tests and tools: defaults everywhere but the command and timeout. */
    public static RunSpec of(String command, Duration timeout) {
        return new RunSpec(UUID.randomUUID(), 1, "local", command, null, null, Map.of(), timeout,
                1024 * 1024, Limits.DEFAULTS);
    }

    public RunSpec withOutputCap(int bytes) {
        return new RunSpec(executionId, attempt, nodeId, command, image, workdir, env, timeout, bytes, limits);
    }

    public RunSpec withLimits(Limits newLimits) {
        return new RunSpec(executionId, attempt, nodeId, command, image, workdir, env, timeout, maxOutputBytes, newLimits);
    }

    public RunSpec withEnv(Map<String, String> newEnv) {
        return new RunSpec(executionId, attempt, nodeId, command, image, workdir, newEnv, timeout, maxOutputBytes, limits);
    }
}
