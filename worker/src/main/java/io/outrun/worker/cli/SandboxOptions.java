package io.outrun.worker.cli;

import io.outrun.core.config.ConfigException;
import io.outrun.model.egress.EgressPolicy;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxUnavailableException;
import io.outrun.sandbox.docker.DockerSandbox;
import io.outrun.sandbox.docker.DockerSandboxConfig.LeftoverScope;
import io.outrun.sandbox.docker.DockerSandboxConfig;
import io.outrun.sandbox.process.ProcessSandbox;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Option;

/** Which sandbox a node runs commands in, and the node's resource limits. */
public final class SandboxOptions {

    private static final Logger LOG = LoggerFactory.getLogger(SandboxOptions.class);

    @Option(names = "--sandbox", defaultValue = "auto",
            description = "auto | docker | process (default ${DEFAULT-VALUE}: docker when an engine answers, else"
                    + " host processes, said loudly). process offers NO isolation: local development only.")
    String kind;

    @Option(names = "--bubblewrap", defaultValue = "auto", description = "auto | on | off: host-process runs in"
            + " bubblewrap (their own PID namespace, the host read-only but their workdir, no network); auto (default) uses"
            + " it when it works here and says loudly when not, on refuses to start without it")
    String bubblewrap;

    @Option(names = "--image", description = "Docker image for executions (default outrun-sandbox:latest, built by sandbox/image/build.sh)")
    String image;

    @Option(names = "--image-allow", split = ",",
            description = "Other images executions may ask for: NAME, PREFIX* or * (default: only --image)")
    List<String> imageAllow;

    @Option(names = "--egress-allow", split = ",", defaultValue = "${env:OUTRUN_EGRESS_ALLOW}",
            description = "Hosts runs with network=egress may reach through this node's proxy: HOST, *.DOMAIN or an IP,"
                    + " each with :PORT (without: 80 and 443); internal addresses only when listed literally"
                    + " (env OUTRUN_EGRESS_ALLOW; default none)")
    List<String> egressAllow;

    @Option(names = "--docker-host", description = "Docker engine (default unix:///var/run/docker.sock)")
    String dockerHost;

    @Option(names = "--engine-grace-s", defaultValue = "60",
            description = "How long a run waits for a Docker engine that stopped answering before its attempt counts"
                    + " as lost (default ${DEFAULT-VALUE}); with the engine's live-restore, runs whose engine is back"
                    + " within it go on in the same attempt")
    long engineGraceS;

    @Option(names = "--pool-size", description = "Warm pool: with Docker, started containers kept waiting per image (the"
            + " default image and each exact --image-allow) so a run skips the container's create and start; with host"
            + " processes, run wrappers (bash) kept waiting so a run skips its spawn; 0 turns the warm pool off (default:"
            + " the node's --slots)")
    Integer poolSize;

    @Option(names = "--memory-mb", defaultValue = "512", description = "Memory limit per execution in MiB, no swap (default ${DEFAULT-VALUE})")
    long memoryMb;

    @Option(names = "--cpus", defaultValue = "1.0", description = "CPUs per execution (default ${DEFAULT-VALUE})")
    double cpus;

    @Option(names = "--pids", defaultValue = "256", description = "Processes per execution (default ${DEFAULT-VALUE})")
    long pids;

    @Option(names = "--tmpfs-mb", defaultValue = "256", description = "Size of the writable workdir and of /tmp in MiB (default ${DEFAULT-VALUE})")
    long tmpfsMb;

    @Option(names = "--network", description = "Docker network executions may use (default: none, loopback only)")
    String network;

    /** The parsed --egress-allow (empty when not given). */
    public EgressPolicy egress() {
        try {
            return EgressPolicy.parse(egressAllow);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(e.getMessage());
        }
    }

    /** What an API node in the same process lets submissions name: the default image and --image-allow. */
    public List<String> imagesAllowed() {
        List<String> images = new ArrayList<>();
        images.add(image != null ? image : DockerSandboxConfig.DEFAULT_IMAGE);
        if (imageAllow != null) {
            images.addAll(imageAllow);
        }
        return images;
    }

    public Limits limits() {
        try {
            return new Limits(memoryMb << 20, (long) (cpus * 1_000_000_000L), pids, tmpfsMb << 20, network);
        } catch (IllegalArgumentException e) {
            throw new ConfigException("sandbox limits: " + e.getMessage());
        }
    }

    /** Opens (and verifies) the sandbox; a bad choice or an unusable backend fails at start. */
    public Sandbox open(String nodeId) {
        return switch (kind) {
            case "process" -> process();
            case "docker" -> docker(nodeId);
            case "auto" -> auto(nodeId);
            default -> throw new ConfigException("--sandbox must be auto, docker or process, got: " + kind);
        };
    }

    /** Paths host-process runs must not see (the dev's data dir): masked in their sandbox. */
    private final List<Path> hidden = new ArrayList<>();
    /** Why host-process runs are not in bubblewrap (null: they are, or the sandbox is Docker). */
    private String unisolatedReason;

    /** Hides {@code path} from host-process runs (call before {@link #open}). */
    public SandboxOptions hide(Path path) {
        hidden.add(path);
        return this;
    }

    public String unisolatedReason() {
        return unisolatedReason;
    }

    private Sandbox process() {
        if (!Set.of("auto", "on", "off").contains(bubblewrap)) {
            throw new ConfigException("--bubblewrap must be auto, on or off, got: " + bubblewrap);
        }
        ProcessSandbox sandbox = new ProcessSandbox();
        if (bubblewrap.equals("off")) {
            unisolatedReason = "--bubblewrap off";
            return pooled(sandbox, sandbox::withPoolSize);
        }
        // Each run in bubblewrap when it can: its own PID namespace (nothing it starts outlives
        // it), the host read-only but for its workdir, no network, the data dir out of sight.
        try {
            sandbox.isolated(hidden);
        } catch (SandboxUnavailableException e) {
            if (bubblewrap.equals("on")) {
                sandbox.close();
                throw new ConfigException("--bubblewrap on: " + e.getMessage());
            }
            unisolatedReason = e.getMessage();
            LOG.warn("""

                    ************************************************************************
                    * Host-process runs are NOT sandboxed: {}.
                    * Commands can read (and write) this user's files, reach the network,
                    * and leave processes running after their end. Install bubblewrap to
                    * give each run its own namespaces.
                    ************************************************************************""", e.getMessage());
        }
        return pooled(sandbox, sandbox::withPoolSize);
    }

    /** Applies {@code --pool-size} (either backend's warm pool); a bad value closes the sandbox and fails the start. */
    private <S extends Sandbox> S pooled(S sandbox, IntConsumer setPoolSize) {
        if (poolSize != null) {
            try {
                setPoolSize.accept(poolSize);
            } catch (IllegalArgumentException e) {
                sandbox.close();
                throw new ConfigException("--pool-size: " + e.getMessage());
            }
        }
        return sandbox;
    }

    private Sandbox docker(String nodeId) {
        DockerSandboxConfig config = DockerSandboxConfig.defaults(nodeId)
                // Node ids may change across restarts: consider every Outrun container on the
                // engine; the clean-up policy keeps those with a live lease anywhere.
                .withLeftoverScope(LeftoverScope.ENGINE);
        if (image != null) {
            config = config.withImage(image);
        }
        if (dockerHost != null) {
            try {
                config = config.withDockerHost(dockerHost);
            } catch (IllegalArgumentException e) {
                throw new ConfigException("--docker-host: " + e.getMessage());
            }
        }
        if (imageAllow != null) {
            config = config.withAllowedImages(imageAllow);
        }
        if (engineGraceS < 1 || engineGraceS > 3600) {
            throw new ConfigException("--engine-grace-s must be between 1 and 3600, got: " + engineGraceS);
        }
        config = config.withEngineGrace(Duration.ofSeconds(engineGraceS));
        DockerSandbox sandbox;
        try {
            sandbox = new DockerSandbox(config);
        } catch (IllegalArgumentException e) {
            throw new ConfigException("--docker-host: " + e.getMessage());
        }
        pooled(sandbox, sandbox::withPoolSize);
        try {
            sandbox.verify();
            if (network != null) {
                try {
                    sandbox.verifyNetwork(network);
                } catch (SandboxUnavailableException e) {
                    throw new ConfigException(e.getMessage()); // a typo, not a reason to fall back to host processes
                }
            }
        } catch (RuntimeException e) {
            sandbox.close();
            throw e;
        }
        return sandbox;
    }

    /** Why {@code --sandbox auto} fell back to host processes (null: it did not), for a banner to say. */
    private String fallbackReason;

    public String fallbackReason() {
        return fallbackReason;
    }

    private Sandbox auto(String nodeId) {
        try {
            return docker(nodeId);
        } catch (SandboxUnavailableException e) {
            fallbackReason = e.getMessage();
            LOG.warn("""

                    ************************************************************************
                    * No usable Docker sandbox ({}).
                    * FALLING BACK TO HOST PROCESSES: commands run as this user, on this
                    * machine, with NO isolation. Use this for local development only;
                    * pass --sandbox docker to refuse to start instead.
                    ************************************************************************""", e.getMessage());
            return process();
        }
    }
}
