package io.outrun.sandbox.docker;

import com.github.dockerjava.api.exception.BadRequestException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Container;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunRefusedException;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxException;
import io.outrun.sandbox.SandboxUnavailableException;
import io.outrun.sandbox.ImageNotAllowedException;
import io.outrun.sandbox.ImageNotFoundException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs each command in its own locked-down container on the node's Docker engine.
 *
 * <p>Every container runs as uid 10001 with all capabilities dropped, {@code no-new-privileges},
 * a read-only root, tmpfs workdir and /tmp, no network unless the spec's limits name one, memory
 * without swap, CPU and pids limits, and docker-init as PID 1 (see {@link ContainerRecipe}). It
 * carries the labels {@code outrun=1}, {@code outrun.execution}, {@code outrun.epoch} (the lease
 * epoch: with the execution, it names this one run), {@code outrun.attempt}, {@code outrun.node} and
 * {@code outrun.incarnation}. Its kill switch: a watchdog inside ends it when the deadline in its
 * read-only lease file passes (see {@link ContainerRecipe}). Output streams through an attach into bounded captures; the container's
 * log driver is {@code none}, so a flood touches neither the heap nor the engine's disk.
 *
 * <p>Lifecycle of a container: created, attached, started ({@link #start}); stopped by its own
 * exit, by the deadline in {@link Run#awaitExit} or by {@link Run#kill}; removed by
 * {@link Run#close}, by {@link #close} for runs still open, or by {@link #removeLeftovers} when a
 * worker died before it could close.
 */
public final class DockerSandbox implements Sandbox {

    private static final Logger log = LoggerFactory.getLogger(DockerSandbox.class);

    private final DockerSandboxConfig config;
    private final DockerClients clients;
    private final EngineWatch watch;
    private final Set<DockerRun> open = ConcurrentHashMap.newKeySet();
    /** The VOLUMEs each image declares, looked up once a minute at most (an operator may re-tag). */
    private final Map<String, ImageVolumes> volumes = new ConcurrentHashMap<>();
    private static final long VOLUMES_TTL_NANOS = TimeUnit.MINUTES.toNanos(1);

    private record ImageVolumes(List<String> paths, long at) {
    }

    public DockerSandbox(DockerSandboxConfig config) {
        this.config = config;
        this.clients = new DockerClients(config);
        this.watch = new EngineWatch(clients, config.nodeId());
    }

    /** False while the engine's event stream is down: the engine is away (restarting, stopped). */
    @Override
    public boolean engineUp() {
        return watch.connected();
    }

    /** How many times this node lost its engine (the event stream) since it started. */
    @Override
    public long engineLosses() {
        return watch.losses();
    }

    @Override
    public String name() {
        return "docker";
    }

    public DockerSandboxConfig config() {
        return config;
    }

    @Override
    public void verify() {
        new EngineCheck(clients, config, this::start).verify();
    }

    /** At node start: the network executions may use exists (else every run would fail to start). */
    public void verifyNetwork(String network) {
        try {
            clients.control.inspectNetworkCmd().withNetworkId(network).exec();
        } catch (NotFoundException e) {
            throw new SandboxUnavailableException("the Docker network '" + network + "' (--network) does not exist on "
                    + config.dockerHost() + "; create it with `docker network create " + network + "` or omit --network", e);
        }
    }

    @Override
    public Run start(RunSpec spec) {
        String image = spec.image() == null ? config.image() : spec.image();
        if (!config.allows(image)) {
            throw new ImageNotAllowedException(image, "image " + image + " is not allowed on node " + config.nodeId()
                    + " (allowed: " + config.image() + (config.allowedImages().isEmpty() ? "" : ", "
                    + String.join(", ", config.allowedImages())) + ")");
        }
        WorkdirVolume workdir = spec.files().touchesWorkdir() ? openWorkdir(spec, image) : null;
        String containerId;
        try {
            containerId = create(spec, image, workdir);
        } catch (RuntimeException e) {
            if (workdir != null) {
                workdir.close();
            }
            throw e;
        }
        OutputCallback output = null;
        watch.track(containerId);
        try {
            // Who ends the container is told by the engine's events: be listening before it starts.
            // (An engine that answered the create does answer; a stream that is slow to open only
            // costs the verdict its evidence, so the wait is short.)
            watch.awaitConnected(config.connectTimeout().toMillis());
            long lossesAtStart = watch.losses();
            output = clients.streams.attachContainerCmd(containerId)
                    .withStdIn(ContainerRecipe.commandStdin(spec.command()))
                    .withStdOut(true)
                    .withStdErr(true)
                    .withFollowStream(true)
                    .withLogs(false)
                    .exec(new OutputCallback(spec.maxOutputBytes(), spec.files(), spec.executionId()));
            // Attach before start, or the first output would be lost (there is no log to replay).
            long attachMillis = config.connectTimeout().plus(config.responseTimeout()).toMillis();
            if (!output.awaitAttached(attachMillis, TimeUnit.MILLISECONDS)) {
                throw new SandboxException("attaching to container " + containerId + " failed or took over "
                        + attachMillis + " ms");
            }
            clients.control.startContainerCmd(containerId).exec();
            DockerRun run = new DockerRun(clients, watch, config, containerId, output, spec.timeout(), lossesAtStart,
                    open::remove);
            run.keepWorkdir(workdir);
            open.add(run);
            return run;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            watch.untrack(containerId);
            discard(containerId, output);
            closeQuietly(workdir);
            throw new SandboxException("interrupted while starting container " + containerId, e);
        } catch (RuntimeException e) {
            watch.untrack(containerId);
            discard(containerId, output);
            closeQuietly(workdir);
            if (e instanceof SandboxException) {
                throw e;
            }
            if (e instanceof BadRequestException) {
                throw new RunRefusedException("the Docker engine refused to start the container: " + e.getMessage(), e);
            }
            throw new SandboxException("cannot start container " + containerId + " for execution "
                    + spec.executionId() + ": " + e.getMessage(), e);
        }
    }

    private static void closeQuietly(WorkdirVolume workdir) {
        if (workdir != null) {
            workdir.close();
        }
    }

    /** The workdir volume of a run that carries files in or out, with its inputs already written. */
    private WorkdirVolume openWorkdir(RunSpec spec, String image) {
        try {
            return WorkdirVolume.open(clients, spec, image, config.nodeId());
        } catch (NotFoundException e) {
            throw new ImageNotFoundException(image, EngineCheck.missingImageMessage(image), e);
        } catch (BadRequestException e) {
            throw new RunRefusedException("the Docker engine refused the run's workdir volume: " + e.getMessage(), e);
        } catch (SandboxException | RunRefusedException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new SandboxException("cannot prepare the workdir of execution " + spec.executionId() + " on "
                    + config.dockerHost() + ": " + e.getMessage(), e);
        }
    }

    private String create(RunSpec spec, String image, WorkdirVolume workdir) {
        List<String> imageVolumes = volumesOf(image);
        try {
            var create = ContainerRecipe.create(clients.control, spec, image, config.nodeId(), imageVolumes);
            if (workdir != null) {
                workdir.mountInto(create);
            }
            return create.exec().getId();
        } catch (NotFoundException e) {
            throw new ImageNotFoundException(image, EngineCheck.missingImageMessage(image), e);
        } catch (BadRequestException e) {
            // The engine refuses this container as specified: every retry would be refused alike.
            throw new RunRefusedException("the Docker engine refused the container: " + e.getMessage(), e);
        } catch (RunRefusedException e) {
            throw e; // the spec cannot become a container (e.g. its workdir): the caller's to fix
        } catch (RuntimeException e) {
            throw new SandboxException("cannot create a container of " + image + " for execution "
                    + spec.executionId() + " on " + config.dockerHost() + ": " + e.getMessage(), e);
        }
    }

    private List<String> volumesOf(String image) {
        long now = System.nanoTime();
        ImageVolumes known = volumes.get(image);
        if (known != null && now - known.at() < VOLUMES_TTL_NANOS) {
            return known.paths();
        }
        try {
            var declared = clients.control.inspectImageCmd(image).exec().getConfig();
            List<String> paths = declared == null || declared.getVolumes() == null ? List.of()
                    : List.copyOf(declared.getVolumes().keySet());
            volumes.put(image, new ImageVolumes(paths, now));
            return paths;
        } catch (NotFoundException e) {
            throw new ImageNotFoundException(image, EngineCheck.missingImageMessage(image), e);
        } catch (RuntimeException e) {
            throw new SandboxException("cannot inspect image " + image + " on " + config.dockerHost() + ": " + e.getMessage(), e);
        }
    }

    private void discard(String containerId, OutputCallback output) {
        if (output != null) {
            output.closeQuietly();
        }
        remove(containerId);
    }

    /**
     * Removes Outrun containers (running or not) whose (execution, epoch) the policy says is no
     * longer current, and those whose labels cannot be read. By default only containers labelled
     * with this node's id are considered, so nodes sharing an engine never touch each other's
     * runs; with {@link DockerSandboxConfig.LeftoverScope#ENGINE} every Outrun container of the
     * engine is, which a node needs when its id changes across restarts. Containers of a node id
     * that never comes back otherwise stay; an operator removes them with
     * {@code docker rm -f $(docker ps -aq -f label=outrun.node=ID)}.
     *
     * @return how many containers were removed
     */
    @Override
    public int removeLeftovers(LeftoverPolicy stillCurrent) {
        Map<String, String> filter = config.leftoverScope() == DockerSandboxConfig.LeftoverScope.NODE
                ? Map.of(ContainerRecipe.LABEL_OUTRUN, "1", ContainerRecipe.LABEL_NODE, config.nodeId())
                : Map.of(ContainerRecipe.LABEL_OUTRUN, "1");
        List<Container> containers;
        try {
            containers = clients.control.listContainersCmd().withShowAll(true).withLabelFilter(filter).exec();
        } catch (RuntimeException e) {
            throw new SandboxUnavailableException("the Docker engine at " + config.dockerHost() + " does not answer: "
                    + e.getMessage(), e);
        }
        int removed = 0;
        for (Container container : containers) {
            if (!isCurrent(container, stillCurrent) && remove(container.getId())) {
                removed++;
            }
        }
        removeLeftoverVolumes(filter, stillCurrent);
        return removed;
    }

    /** Workdir volumes of runs no longer live (their containers are gone by now, or the removal waits for the next round). */
    private void removeLeftoverVolumes(Map<String, String> filter, LeftoverPolicy stillCurrent) {
        try {
            var answer = clients.control.listVolumesCmd()
                    .withFilter("label", filter.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList())
                    .exec();
            if (answer.getVolumes() == null) {
                return;
            }
            for (var volume : answer.getVolumes()) {
                Map<String, String> labels = volume.getLabels() == null ? Map.of() : volume.getLabels();
                boolean current;
                try {
                    current = stillCurrent.isCurrent(UUID.fromString(labels.get(ContainerRecipe.LABEL_EXECUTION)),
                            Long.parseLong(labels.get(ContainerRecipe.LABEL_EPOCH)));
                } catch (RuntimeException e) {
                    current = false;
                }
                if (!current) {
                    WorkdirVolume.removeVolume(clients, volume.getName());
                }
            }
        } catch (RuntimeException e) {
            log.warn("listing leftover workdir volumes failed ({})", e.getMessage());
        }
    }

    private static boolean isCurrent(Container container, LeftoverPolicy stillCurrent) {
        Map<String, String> labels = container.getLabels();
        try {
            UUID execution = UUID.fromString(labels.get(ContainerRecipe.LABEL_EXECUTION));
            long epoch = Long.parseLong(labels.get(ContainerRecipe.LABEL_EPOCH));
            return stillCurrent.isCurrent(execution, epoch);
        } catch (RuntimeException e) {
            // Also containers of nodes older than lease epochs: their run's lease is long gone.
            log.warn("container {} has unreadable Outrun labels {}; removing it", container.getId(), labels);
            return false;
        }
    }

    /** Kills and removes a container; true when it was removed by this call. */
    private boolean remove(String containerId) {
        try {
            clients.control.removeContainerCmd(containerId).withForce(true).withRemoveVolumes(true).exec();
            return true;
        } catch (NotFoundException e) {
            return false;
        } catch (RuntimeException e) {
            log.warn("removing container {} failed", containerId, e);
            return false;
        }
    }

    /** Closes (kills and removes) every run still open, then the engine connections. */
    @Override
    public void close() {
        for (DockerRun run : List.copyOf(open)) {
            run.close();
        }
        watch.close();
        clients.close();
    }
}
