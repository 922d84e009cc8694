package io.outrun.sandbox;

import io.outrun.model.inputs.StdinMode;
import io.outrun.sandbox.files.RunFiles;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * What to run and within which bounds. Values are already clamped by the caller.
 *
 * @param executionId    the execution this run belongs to (labels the container)
 * @param attempt        the attempt number (labels the container, for people)
 * @param epoch          the lease epoch of this run's claim: never reused, so (execution, epoch)
 *                       names this one run; leftover clean-up keeps a run only while it is live
 * @param nodeId         the node that runs it
 * @param incarnation    the node's incarnation (node id and a per-process id) holding the lease
 * @param command        bash source of any length; it never passes through an argv
 * @param image          container image, or null for the backend's default
 * @param workdir        working directory inside the sandbox, or null for the default
 * @param env            environment the execution asked for, already filtered by the allowlist
 * @param timeout        wall-clock limit; at the deadline the whole run is killed
 * @param maxOutputBytes bytes kept per stream (head plus tail)
 * @param limits         resource limits
 * @param leaseFile      the kill switch: a host file holding, as decimal epoch seconds, the moment
 *                       the run must die unless its worker confirms its lease again; the run
 *                       watches it itself and ends once that moment passes (null: no kill switch)
 * @param files          files written into the workdir before the start, whether the workdir is
 *                       read back after the end, and the full-output spool ({@link RunFiles#NONE}: none)
 * @param stdin          the command's stdin: /dev/null, a pipe fed by {@link Run#writeStdin}, or a
 *                       pseudo-terminal (stdin and output through it)
 * @param secrets        the owner's secrets the execution named, by name: set in the command's
 *                       environment beside {@code env} and masked as {@code [secret:NAME]} in its
 *                       output before anything of it is kept; never in {@link #toString}
 */
public record RunSpec(
        UUID executionId,
        int attempt,
        long epoch,
        String nodeId,
        String incarnation,
        String command,
        String image,
        String workdir,
        Map<String, String> env,
        Duration timeout,
        int maxOutputBytes,
        Limits limits,
        Path leaseFile,
        RunFiles files,
        StdinMode stdin,
        Map<String, String> secrets) {

    public RunSpec(UUID executionId, int attempt, long epoch, String nodeId, String incarnation, String command,
                   String image, String workdir, Map<String, String> env, Duration timeout, int maxOutputBytes,
                   Limits limits, Path leaseFile, RunFiles files, StdinMode stdin) {
        this(executionId, attempt, epoch, nodeId, incarnation, command, image, workdir, env, timeout, maxOutputBytes,
                limits, leaseFile, files, stdin, null);
    }

    public RunSpec(UUID executionId, int attempt, long epoch, String nodeId, String incarnation, String command,
                   String image, String workdir, Map<String, String> env, Duration timeout, int maxOutputBytes,
                   Limits limits, Path leaseFile, RunFiles files) {
        this(executionId, attempt, epoch, nodeId, incarnation, command, image, workdir, env, timeout, maxOutputBytes,
                limits, leaseFile, files, null);
    }

    public RunSpec(UUID executionId, int attempt, long epoch, String nodeId, String incarnation, String command,
                   String image, String workdir, Map<String, String> env, Duration timeout, int maxOutputBytes,
                   Limits limits, Path leaseFile) {
        this(executionId, attempt, epoch, nodeId, incarnation, command, image, workdir, env, timeout, maxOutputBytes,
                limits, leaseFile, null);
    }

    public RunSpec {
        files = files == null ? RunFiles.NONE : files;
        stdin = stdin == null ? StdinMode.NONE : stdin;
        Objects.requireNonNull(executionId, "executionId");
        Objects.requireNonNull(command, "command");
        Objects.requireNonNull(timeout, "timeout");
        env = env == null ? Map.of() : Map.copyOf(env);
        secrets = secrets == null ? Map.of() : Map.copyOf(secrets);
        limits = limits == null ? Limits.DEFAULTS : limits;
        if (maxOutputBytes <= 0) {
            throw new IllegalArgumentException("maxOutputBytes must be positive: " + maxOutputBytes);
        }
    }

    /** A spec for tests and tools: defaults everywhere but the command and timeout. */
    public static RunSpec of(String command, Duration timeout) {
        return new RunSpec(UUID.randomUUID(), 1, 1, "local", "local", command, null, null, Map.of(), timeout,
                1024 * 1024, Limits.DEFAULTS, null);
    }

    public RunSpec withOutputCap(int bytes) {
        return new RunSpec(executionId, attempt, epoch, nodeId, incarnation, command, image, workdir, env, timeout, bytes, limits, leaseFile, files, stdin, secrets);
    }

    public RunSpec withLimits(Limits newLimits) {
        return new RunSpec(executionId, attempt, epoch, nodeId, incarnation, command, image, workdir, env, timeout, maxOutputBytes, newLimits, leaseFile, files, stdin, secrets);
    }

    public RunSpec withLeaseFile(Path file) {
        return new RunSpec(executionId, attempt, epoch, nodeId, incarnation, command, image, workdir, env, timeout,
                maxOutputBytes, limits, file, files, stdin, secrets);
    }

    public RunSpec withFiles(RunFiles newFiles) {
        return new RunSpec(executionId, attempt, epoch, nodeId, incarnation, command, image, workdir, env, timeout,
                maxOutputBytes, limits, leaseFile, newFiles, stdin, secrets);
    }

    public RunSpec withStdin(StdinMode mode) {
        return new RunSpec(executionId, attempt, epoch, nodeId, incarnation, command, image, workdir, env, timeout,
                maxOutputBytes, limits, leaseFile, files, mode, secrets);
    }

    public RunSpec withSecrets(Map<String, String> values) {
        return new RunSpec(executionId, attempt, epoch, nodeId, incarnation, command, image, workdir, env, timeout,
                maxOutputBytes, limits, leaseFile, files, stdin, values);
    }

    /** The command's environment: {@code env}, then the secrets (a name in both is refused before). */
    public Map<String, String> runEnv() {
        if (secrets.isEmpty()) {
            return env;
        }
        Map<String, String> all = new LinkedHashMap<>(env);
        all.putAll(secrets);
        return all;
    }

    /** Without the secrets' values, which would otherwise reach any log line that prints a spec. */
    @Override
    public String toString() {
        return "RunSpec[executionId=" + executionId + ", attempt=" + attempt + ", epoch=" + epoch + ", nodeId=" + nodeId
                + ", image=" + image + ", workdir=" + workdir + ", env=" + env.keySet() + ", secrets=" + secrets.keySet()
                + ", timeout=" + timeout + ", maxOutputBytes=" + maxOutputBytes + ", limits=" + limits + ", stdin=" + stdin + "]";
    }

    /** The same run with {@code newCommand} (the command with a relay in front of it). */
    public RunSpec withCommand(String newCommand) {
        return new RunSpec(executionId, attempt, epoch, nodeId, incarnation, newCommand, image, workdir, env, timeout, maxOutputBytes, limits, leaseFile, files, stdin, secrets);
    }

    public RunSpec withEnv(Map<String, String> newEnv) {
        return new RunSpec(executionId, attempt, epoch, nodeId, incarnation, command, image, workdir, newEnv, timeout, maxOutputBytes, limits, leaseFile, files, stdin, secrets);
    }
}
