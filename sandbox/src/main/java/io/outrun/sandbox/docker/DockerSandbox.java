package io.outrun.sandbox.docker;

import com.github.dockerjava.api.exception.BadRequestException;
import com.github.dockerjava.api.exception.NotFoundException;
import io.outrun.sandbox.ImageNotAllowedException;
import io.outrun.sandbox.ImageNotFoundException;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunRefusedException;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxException;
import io.outrun.sandbox.SandboxUnavailableException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs each command in its own locked-down container on the node's Docker engine.
 *
 * <p>Every command runs as uid 10001 with no capabilities, {@code no-new-privileges} (its container's
 * bootstrap and kill switch stay root with four capabilities, out of the command's reach),
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
    private final LeftoverContainers leftovers;
    private final Set<DockerRun> open = ConcurrentHashMap.newKeySet();
    /** The VOLUMEs each image declares, looked up once a minute at most (an operator may re-tag). */
    private final Map<String, ImageVolumes> volumes = new ConcurrentHashMap<>();
    private static final long VOLUMES_TTL_NANOS = TimeUnit.MINUTES.toNanos(1);

    private record ImageVolumes(List<String> paths, long at) {
    }

    /** Containers kept started per image: -1 until set means "as many as the node's slots"; 0: no pool. */
    private volatile int poolSize = -1;
    private volatile WarmPool pool;
    /** Who makes this sandbox's containers; the deployment is known from {@link #prepare}. */
    private volatile ContainerRecipe.Owner owner;
    private final AtomicLong pooledRuns = new AtomicLong();

    public DockerSandbox(DockerSandboxConfig config) {
        this.config = config;
        this.clients = new DockerClients(config);
        this.watch = new EngineWatch(clients, config.nodeId());
        this.owner = new ContainerRecipe.Owner(config.nodeId(), null);
        this.leftovers = new LeftoverContainers(clients, config, () -> {
            WarmPool p = pool;
            return p == null ? null : p.incarnation();
        });
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

    /**
     * Sets how many started containers wait per pooled image ({@code --pool-size}); 0 turns the
     * warm pool off. Takes effect at {@link #prepare}; by default the node's slots.
     */
    public DockerSandbox withPoolSize(int size) {
        if (size < 0 || size > 64) {
            throw new IllegalArgumentException("the warm pool size must be between 0 and 64, got: " + size);
        }
        this.poolSize = size;
        return this;
    }

    /** Whether pooled containers start their API relay ahead ({@link #withApiRelay}). */
    private volatile boolean apiRelay;

    /**
     * The node has an API bridge (issue 31): each pooled container serves its API directory's
     * socket on {@code 127.0.0.1:}{@value io.outrun.sandbox.Limits#API_RELAY_PORT} before it waits for its run, so a
     * run it takes pays nothing for the relay (a fresh container with an API socket starts it
     * before its command). Call before {@link #prepare}.
     */
    public DockerSandbox withApiRelay() {
        this.apiRelay = true;
        return this;
    }

    /**
     * Starts the warm pool for the node's runs: the default image and every exact image
     * reference allowed (a pattern names no image to start ahead).
     */
    @Override
    public synchronized void prepare(NodeShape node) {
        owner = new ContainerRecipe.Owner(config.nodeId(), node.deployment());
        int size = poolSize < 0 ? node.slots() : poolSize;
        if (size == 0 || pool != null) {
            return;
        }
        List<String> images = new ArrayList<>();
        images.add(config.image());
        config.allowedImages().stream().filter(i -> !i.contains("*") && !images.contains(i)).forEach(images::add);
        WarmPool p = new WarmPool(clients, owner, node, size, images, this::volumesOf, apiRelay);
        pool = p;
        p.fill();
        log.info("warm pool: {} started container(s) kept waiting per image for {}", size, images);
    }

    /** Runs started in a pooled container since this sandbox was made. */
    public long pooledRuns() {
        return pooledRuns.get();
    }

    /** Containers of the warm pool waiting now (0 without a pool). */
    public int poolWaiting() {
        WarmPool p = pool;
        return p == null ? 0 : p.waiting();
    }

    @Override
    public Run start(RunSpec spec) {
        String image = spec.image() == null ? config.image() : spec.image();
        if (!config.allows(image)) {
            throw new ImageNotAllowedException(image, "image " + image + " is not allowed on node " + config.nodeId()
                    + " (allowed: " + config.image() + (config.allowedImages().isEmpty() ? "" : ", "
                    + String.join(", ", config.allowedImages())) + ")");
        }
        ContainerRecipe.refuseNul(spec);
        WarmPool p = pool;
        // A run with files in or out needs its workdir volume from before the start: never pooled.
        boolean needsWorkdir = spec.files().touchesWorkdir();
        if (p != null && !needsWorkdir && p.fits(spec, image)) {
            Optional<WarmPool.Warm> warm = p.take(spec, image);
            if (warm.isPresent()) {
                Optional<Run> run = startPooled(spec, warm.get(), p);
                if (run.isPresent()) {
                    return run.get();
                }
            }
        }
        WorkdirVolume workdir = needsWorkdir ? openWorkdir(spec, image) : null;
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
        StdinFrames frames = null;
        watch.track(containerId);
        try {
            // Who ends the container is told by the engine's events: be listening before it starts.
            // (An engine that answered the create does answer; a stream that is slow to open only
            // costs the verdict its evidence, so the wait is short.)
            watch.awaitConnected(config.connectTimeout().toMillis());
            long lossesAtStart = watch.losses();
            InputStream header = ContainerRecipe.commandStdin(spec);
            frames = spec.stdin().open() ? new StdinFrames(header) : null;
            output = attach(containerId, frames != null ? frames : header, spec);
            // Attach before start, or the first output would be lost (there is no log to replay).
            awaitAttached(output, "container " + containerId);
            clients.control.startContainerCmd(containerId).exec();
            DockerRun run = new DockerRun(clients, watch, config, containerId, output, spec.timeout(), lossesAtStart,
                    open::remove);
            run.keepWorkdir(workdir);
            run.stdin(frames);
            open.add(run);
            return run;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            watch.untrack(containerId);
            abort(frames);
            discard(containerId, output);
            closeQuietly(workdir);
            throw new SandboxException("interrupted while starting container " + containerId, e);
        } catch (RuntimeException e) {
            watch.untrack(containerId);
            abort(frames); // else docker-java's stdin copier waits in it for ever
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

    /**
     * Hands the run to a pooled container, already started and waiting in its bootstrap: attach,
     * and the command (with its environment and backstop) goes down its stdin. Empty when the
     * container cannot take it (it exited, the engine refuses): the caller starts a fresh one.
     * Files a run needs in its workdir before the command starts (a put-archive of a tar) go in
     * here, before the attach: the bootstrap runs nothing until the command arrives.
     */
    private Optional<Run> startPooled(RunSpec spec, WarmPool.Warm warm, WarmPool p) {
        String containerId = warm.containerId();
        OutputCallback output = null;
        GatedStdin stdin = null;
        StdinFrames frames = null;
        watch.track(containerId);
        try {
            watch.awaitConnected(config.connectTimeout().toMillis());
            long lossesAtStart = watch.losses();
            stdin = ContainerRecipe.pooledStdin(spec);
            frames = spec.stdin().open() ? new StdinFrames(stdin) : null;
            output = attach(containerId, frames != null ? frames : stdin, spec);
            awaitAttached(output, "pooled container " + containerId);
            // An attach to a container that ended while it waited (its idle time up, killed) can
            // still be answered: only the engine says whether it still runs, and nothing is sent yet.
            if (!Boolean.TRUE.equals(clients.control.inspectContainerCmd(containerId).exec().getState().getRunning())) {
                throw new SandboxException("pooled container " + containerId + " ended while it waited");
            }
            // Alive and attached, with nothing sent yet: now the command goes (see GatedStdin).
            stdin.open();
            p.nameSoon(containerId, spec);
            DockerRun run = new DockerRun(clients, watch, config, containerId, output, spec.timeout(), lossesAtStart,
                    r -> {
                        open.remove(r);
                        WarmPool.deleteFiles(warm);
                    });
            run.stdin(frames);
            open.add(run);
            pooledRuns.incrementAndGet();
            return Optional.of(run);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            watch.untrack(containerId);
            if (stdin != null) {
                stdin.abandon();
            }
            if (frames != null) {
                frames.abort();
            }
            if (output != null) {
                output.closeQuietly();
            }
            p.discard(warm);
            throw new SandboxException("interrupted while handing a run to pooled container " + containerId, e);
        } catch (RuntimeException e) {
            watch.untrack(containerId);
            if (stdin != null) {
                stdin.abandon();
            }
            if (frames != null) {
                frames.abort();
            }
            if (output != null) {
                output.closeQuietly();
            }
            p.discard(warm);
            log.warn("pooled container {} could not take execution {} ({}); starting a fresh container", containerId,
                    spec.executionId(), e.toString());
            return Optional.empty();
        }
    }

    /** Attaches to a container's streams, {@code stdin} as its input, output captured as {@code spec} bounds it. */
    private OutputCallback attach(String containerId, InputStream stdin, RunSpec spec) {
        return clients.streams.attachContainerCmd(containerId)
                .withStdIn(stdin)
                .withStdOut(true)
                .withStdErr(true)
                .withFollowStream(true)
                .withLogs(false)
                .exec(new OutputCallback(spec));
    }

    private void awaitAttached(OutputCallback output, String what) throws InterruptedException {
        long attachMillis = config.connectTimeout().plus(config.responseTimeout()).toMillis();
        if (!output.awaitAttached(attachMillis, TimeUnit.MILLISECONDS)) {
            throw new SandboxException("attaching to " + what + " failed or took over " + attachMillis + " ms");
        }
    }

    private static void abort(StdinFrames frames) {
        if (frames != null) {
            frames.abort();
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
            return WorkdirVolume.open(clients, spec, image, owner, volumesOf(image));
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
            var create = ContainerRecipe.create(clients.control, spec, image, owner, imageVolumes);
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
        LeftoverContainers.removeContainer(clients, containerId);
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
        return leftovers.remove(stillCurrent);
    }

    /** Closes (kills and removes) every run still open, then the engine connections. */
    @Override
    public void close() {
        WarmPool p = pool;
        if (p != null) {
            p.close();
        }
        for (DockerRun run : List.copyOf(open)) {
            run.close();
        }
        watch.close();
        clients.close();
    }
}
