package io.outrun.sandbox.docker;

import io.outrun.sandbox.Limits;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Containers created and started ahead of need, per image, each waiting in its bootstrap for the
 * one run it will serve (see {@link ContainerRecipe#createPooled}). A run that fits the pool's
 * shape (its image, the node's default limits with or without an API socket of its own, the
 * default workdir, an environment that can travel as {@code export} lines) takes one and skips
 * the create and start; any other run gets a fresh container as before. A taken container is never given back: it is removed with its run.
 * The pool refills in the background, one container at a time, so a burst of takes never blocks
 * on creates.
 *
 * <p>Lease file: a container's bind mounts are fixed when it is created, before its run is known.
 * Each pooled container therefore mounts a file of its own, {@code pool-<uuid>} in the node's
 * lease directory, empty while it waits (the bootstrap reads it only once the command arrived).
 * When a run takes the container, the run's lease file becomes a hard link to that very inode
 * (the lease keeper writes in place, so its renewals then reach the container), after the
 * deadline already written for the run is copied in. A renewal written to the run's old file
 * between the copy and the link is lost until the next one: the container then sees an earlier
 * deadline, which can only make it die early, never late.
 *
 * <p>API socket: likewise, each pooled container mounts a directory of its own,
 * {@code pool-<uuid>.api} in the lease directory (0755: the sandbox user traverses it), at
 * {@link ContainerRecipe#API_DIR}, empty while it waits. A run with an API bridge socket
 * ({@link Limits#apiSocket}, under the lease directory: the same file system) that takes the
 * container gets its socket hard-linked in there as {@value Limits#API_SOCKET_NAME}: a unix
 * socket is found by its inode, so a connect through the link reaches the run's listener, and
 * once the listener closes, nothing. Mounts of a pooled container and a fresh one then differ
 * only for runs without an API socket, which see an empty read-only directory there. The
 * directory goes with its container (with its lease file).
 *
 * <p>Labels: {@code outrun=1}, {@code outrun.node}, {@code outrun.incarnation} (the node
 * process) and {@code outrun.pool=1}; no execution or epoch, since those are not known when the
 * container is made. The clean-up keeps pooled containers of this process and of live nodes and
 * removes the rest ({@link DockerSandbox#removeLeftovers}); an idle pooled container of a node
 * that is gone also exits by itself after {@link ContainerRecipe#POOL_IDLE_S}.
 *
 * <p>Memory: each pooled container has the node's per-run memory limit; idle, it holds one bash
 * waiting on a read (a few MiB). At most {@code size} per image wait, so a node's containers
 * number at most slots + size × images.
 */
final class WarmPool implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(WarmPool.class);

    /** A started container waiting for its run, and the lease file and API directory it mounts (null: none). */
    record Warm(String containerId, Path leaseFile, Path apiDir) {
    }

    /** The suffix of a pooled container's API directory, after its lease file's name. */
    static final String API_DIR_SUFFIX = ".api";

    private final DockerClients clients;
    private final ContainerRecipe.Owner owner;
    private final String incarnation;
    private final Limits limits;
    private final Path leaseDir;
    private final int size;
    private final Function<String, List<String>> volumesOf;
    private final Map<String, Deque<Warm>> idle = new LinkedHashMap<>();
    private final Map<String, Integer> creating = new LinkedHashMap<>();
    private final ExecutorService refiller;
    private volatile boolean closed;
    /** Whether each container's API relay listens before it waits (the node has an API bridge). */
    private final boolean apiRelay;

    WarmPool(DockerClients clients, ContainerRecipe.Owner owner, Sandbox.NodeShape shape, int size, List<String> images,
             Function<String, List<String>> volumesOf, boolean apiRelay) {
        this.apiRelay = apiRelay;
        this.clients = clients;
        this.owner = owner;
        this.incarnation = shape.incarnation();
        this.limits = shape.limits();
        this.leaseDir = shape.leaseDir() == null ? null : shape.leaseDir().toAbsolutePath();
        this.size = size;
        this.volumesOf = volumesOf;
        images.forEach(image -> {
            idle.put(image, new ArrayDeque<>());
            creating.put(image, 0);
        });
        this.refiller = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "outrun-warm-pool");
            t.setDaemon(true);
            return t;
        });
    }

    String incarnation() {
        return incarnation;
    }

    /** Starts filling every image's pool (in the background). */
    void fill() {
        idle.keySet().forEach(this::refillSoon);
    }

    /**
     * True when {@code spec}, to run in {@code image}, would run in a pooled container exactly as
     * in a fresh one.
     */
    boolean fits(RunSpec spec, String image) {
        // The API socket is the run's own: linked into the container's API directory at the take.
        if (!idle.containsKey(image) || !limits.equals(spec.limits().withApiSocket(null))) {
            return false;
        }
        Path apiSocket = spec.limits().apiSocket();
        if (apiSocket != null && (leaseDir == null || !apiSocket.toAbsolutePath().normalize().startsWith(leaseDir.normalize()))) {
            return false; // a hard link needs the same file system: the lease directory's
        }
        if (spec.workdir() != null && !spec.workdir().isBlank()
                && !ContainerRecipe.DEFAULT_WORKDIR.equals(spec.workdir())) {
            return false;
        }
        if (spec.leaseFile() != null && (leaseDir == null
                || !leaseDir.equals(spec.leaseFile().toAbsolutePath().getParent()))) {
            return false; // a hard link needs the same directory (file system)
        }
        return ContainerRecipe.poolableEnv(spec.runEnv());
    }

    /**
     * A waiting container for {@code spec} (which {@link #fits}), its lease file now the run's;
     * empty when none is waiting. The pool refills behind it.
     */
    Optional<Warm> take(RunSpec spec, String image) {
        Warm warm;
        synchronized (this) {
            Deque<Warm> waiting = idle.get(image);
            warm = waiting == null ? null : waiting.pollFirst();
        }
        refillSoon(image);
        if (warm == null) {
            return Optional.empty();
        }
        Path apiSocket = spec.limits().apiSocket();
        if (apiSocket != null) {
            try {
                linkApiSocket(warm.apiDir(), apiSocket);
            } catch (IOException e) {
                log.warn("pooled container {}: cannot link the run's API socket ({}); using a fresh container",
                        warm.containerId(), e.toString());
                discard(warm);
                return Optional.empty();
            }
        }
        if (spec.leaseFile() != null) {
            try {
                adoptLeaseFile(warm.leaseFile(), spec.leaseFile());
            } catch (IOException e) {
                log.warn("pooled container {}: cannot link the run's lease file ({}); using a fresh container",
                        warm.containerId(), e.toString());
                discard(warm);
                return Optional.empty();
            }
        }
        return Optional.of(warm);
    }

    /**
     * Names a taken container for its run, {@code outrun-<execution>-e<epoch>}, off the run's
     * start path (behind the refills): labels cannot change on a live container, and a name lets
     * an operator find a pooled run's container as {@code docker ps --filter name=outrun-<execution>}.
     */
    void nameSoon(String containerId, RunSpec spec) {
        String name = ContainerRecipe.name(spec);
        try {
            refiller.execute(() -> {
                try {
                    clients.control.renameContainerCmd(containerId).withName(name).exec();
                } catch (RuntimeException e) {
                    // Gone already (a short run) or the engine is away: a name is only a convenience.
                    log.debug("naming pooled container {} {} failed: {}", containerId, name, e.toString());
                }
            });
        } catch (RejectedExecutionException e) {
            // Closing: nothing to name.
        }
    }

    /** The run's API socket appears in the pooled container's API directory: a hard link, under the name the container expects. */
    static void linkApiSocket(Path apiDir, Path socket) throws IOException {
        if (apiDir == null) {
            throw new IOException("the pooled container has no API directory");
        }
        Files.createLink(apiDir.resolve(Limits.API_SOCKET_NAME), socket);
    }

    /** The run's lease file becomes the pooled container's: its current deadline first, then a link. */
    private static void adoptLeaseFile(Path poolFile, Path runFile) throws IOException {
        if (Files.exists(runFile)) {
            Files.write(poolFile, Files.readAllBytes(runFile)); // in place: the bind mount keeps the inode
        }
        Path link = runFile.resolveSibling(runFile.getFileName() + ".link-" + UUID.randomUUID());
        Files.createLink(link, poolFile);
        Files.move(link, runFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private void refillSoon(String image) {
        synchronized (this) {
            if (closed || !idle.containsKey(image) || idle.get(image).size() + creating.get(image) >= size) {
                return;
            }
            creating.merge(image, 1, Integer::sum);
        }
        try {
            refiller.execute(() -> {
                try {
                    Warm warm = create(image);
                    boolean keep;
                    synchronized (this) {
                        keep = !closed;
                        if (keep) {
                            idle.get(image).addLast(warm);
                        }
                    }
                    if (!keep) {
                        discard(warm);
                    }
                } catch (RuntimeException | IOException e) {
                    // The engine is away or refuses: runs get fresh containers meanwhile, and the
                    // next take tries again.
                    log.warn("cannot add a container of {} to the warm pool: {}", image, e.toString());
                } finally {
                    synchronized (this) {
                        creating.merge(image, -1, Integer::sum);
                    }
                }
                refillSoon(image);
            });
        } catch (RejectedExecutionException e) {
            synchronized (this) {
                creating.merge(image, -1, Integer::sum);
            }
        }
    }

    private Warm create(String image) throws IOException {
        Path leaseFile = null;
        Path apiDir = null;
        if (leaseDir != null) {
            Files.createDirectories(leaseDir);
            leaseFile = leaseDir.resolve("pool-" + UUID.randomUUID());
            Files.write(leaseFile, new byte[0]);
            // The sandbox user (another uid) must read it, whatever this process's umask.
            Files.setPosixFilePermissions(leaseFile, PosixFilePermissions.fromString("rw-r--r--"));
            // After the lease file, removed before it (deleteFiles): a directory without its lease
            // file is a leftover (the worker's stale-file pruning relies on that).
            apiDir = leaseFile.resolveSibling(leaseFile.getFileName() + API_DIR_SUFFIX);
            try {
                Files.createDirectory(apiDir);
                // The sandbox user traverses it to the socket, whatever this process's umask.
                Files.setPosixFilePermissions(apiDir, PosixFilePermissions.fromString("rwxr-xr-x"));
            } catch (IOException e) {
                deleteFiles(new Warm(null, leaseFile, apiDir));
                throw e;
            }
        }
        String id = null;
        try {
            id = ContainerRecipe.createPooled(clients.control, image, owner, incarnation, limits, leaseFile, apiDir,
                    apiRelay, volumesOf.apply(image)).exec().getId();
            clients.control.startContainerCmd(id).exec();
            return new Warm(id, leaseFile, apiDir);
        } catch (RuntimeException e) {
            discard(new Warm(id, leaseFile, apiDir));
            throw e;
        }
    }

    /** Removes a pooled container nobody will use, and its files. */
    void discard(Warm warm) {
        if (warm.containerId() != null) {
            try {
                clients.control.removeContainerCmd(warm.containerId()).withForce(true).withRemoveVolumes(true).exec();
            } catch (RuntimeException e) {
                log.debug("removing pooled container {} failed: {}", warm.containerId(), e.toString());
            }
        }
        deleteFiles(warm);
    }

    /**
     * Deletes a pooled container's lease file and API directory (with the run's socket link in
     * it, if any), once the container is gone or going: the directory first, then the file.
     */
    static void deleteFiles(Warm warm) {
        Path dir = warm.apiDir();
        if (dir != null) {
            try {
                Files.deleteIfExists(dir.resolve(Limits.API_SOCKET_NAME));
                Files.deleteIfExists(dir);
            } catch (IOException e) {
                log.debug("cannot delete pool API directory {}: {}", dir, e.toString());
            }
        }
        Path file = warm.leaseFile();
        if (file != null) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                log.debug("cannot delete pool lease file {}: {}", file, e.toString());
            }
        }
    }

    /** How many containers wait now, all images together. */
    synchronized int waiting() {
        return idle.values().stream().mapToInt(Deque::size).sum();
    }

    /** Stops refilling and removes every waiting container (taken ones go with their runs). */
    @Override
    public void close() {
        List<Warm> left;
        synchronized (this) {
            closed = true;
            left = idle.values().stream().flatMap(Deque::stream).toList();
            idle.values().forEach(Deque::clear);
        }
        refiller.shutdown();
        left.forEach(this::discard);
        try {
            // A create in flight finishes and is discarded by its own task: wait for it (bounded).
            refiller.awaitTermination(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
