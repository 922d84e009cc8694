package io.outrun.cli;

import io.outrun.sandbox.Limits;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.store.ConfigException;
import picocli.CommandLine.Option;

/** Which sandbox a node runs commands in, and the node's resource limits. */
public final class SandboxOptions {

    @Option(names = "--sandbox", defaultValue = "process", description = "process | docker (default ${DEFAULT-VALUE})")
    String kind;

    @Option(names = "--image", description = "Docker image for executions (default outrun-sandbox:latest)")
    String image;

    @Option(names = "--memory-mb", defaultValue = "512", description = "Memory limit per execution in MiB, no swap (default ${DEFAULT-VALUE})")
    long memoryMb;

    @Option(names = "--cpus", defaultValue = "1.0", description = "CPUs per execution (default ${DEFAULT-VALUE})")
    double cpus;

    @Option(names = "--pids", defaultValue = "256", description = "Processes per execution (default ${DEFAULT-VALUE})")
    long pids;

    @Option(names = "--network", description = "Docker network executions may use (default: none, loopback only)")
    String network;

    public Limits limits() {
        try {
            return new Limits(memoryMb << 20, (long) (cpus * 1_000_000_000L), pids, 256L << 20, network);
        } catch (IllegalArgumentException e) {
            throw new ConfigException("sandbox limits: " + e.getMessage());
        }
    }

    public Sandbox open(String nodeId) {
        return switch (kind) {
            case "process" -> new ProcessSandbox();
            default -> throw new ConfigException("--sandbox must be process or docker, got: " + kind);
        };
    }
}
