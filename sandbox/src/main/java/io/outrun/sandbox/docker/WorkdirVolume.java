package io.outrun.sandbox.docker;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.command.CreateContainerCmd;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.LogConfig;
import com.github.dockerjava.api.model.Mount;
import com.github.dockerjava.api.model.MountType;
import com.github.dockerjava.transport.DockerHttpClient;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.SandboxException;
import io.outrun.sandbox.files.TarEntries;
import io.outrun.sandbox.files.TarSource;
import io.outrun.sandbox.files.WorkdirEntry;
import io.outrun.sandbox.files.WorkdirVisitor;
import java.io.IOException;
import java.io.InputStream;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The workdir of a run that carries files in or out: a tmpfs volume, bounded like the usual tmpfs
 * workdir, that the engine's archive API can reach, which a plain tmpfs mount is not (it lives in
 * the container's mount namespace only and vanishes when the container stops).
 *
 * <p>A tmpfs volume is mounted while some container that uses it runs, so a small holder
 * container (no capabilities, no network, read-only root, {@code sleep}) keeps it mounted from
 * before the command's container starts until after it stopped. Files go in through the holder
 * ({@code PUT /archive}) before the command starts and come out through it ({@code GET /archive})
 * after the command ended, whatever ended it. The command gains nothing: it never sees the holder.
 * A warm pool can put the same tars into its own container through {@link #put}.
 *
 * <p>Both carry the run's labels (holder: {@code outrun.role=holder}), so the leftover clean-up
 * removes them with the run when a worker dies.
 */
final class WorkdirVolume implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(WorkdirVolume.class);
    static final String LABEL_ROLE = "outrun.role";
    /** How long past the run's own backstop a holder may outlive a dead worker. */
    private static final long HOLDER_GRACE_S = 600;

    private final DockerClients clients;
    private final String volume;
    private final String workdir;
    private String holderId;

    private WorkdirVolume(DockerClients clients, String volume, String workdir) {
        this.clients = clients;
        this.volume = volume;
        this.workdir = workdir;
    }

    static String volumeName(RunSpec spec) {
        return "outrun-work-" + spec.executionId() + "-" + spec.epoch();
    }

    /** Creates the volume and starts its holder; closes what it made when a step fails. */
    static WorkdirVolume open(DockerClients clients, RunSpec spec, String image, ContainerRecipe.Owner owner,
                              Collection<String> imageVolumes) {
        String workdir = ContainerRecipe.workdir(spec);
        WorkdirVolume made = new WorkdirVolume(clients, volumeName(spec), workdir);
        Map<String, String> labels = ContainerRecipe.labels(spec, owner);
        try {
            clients.control.createVolumeCmd()
                    .withName(made.volume)
                    .withDriver("local")
                    .withDriverOpts(Map.of("type", "tmpfs", "device", "tmpfs",
                            "o", "size=" + spec.limits().tmpfsBytes() + ",uid=10001,gid=10001,mode=0755"))
                    .withLabels(labels)
                    .exec();
            Map<String, String> holderLabels = new LinkedHashMap<>(labels);
            holderLabels.put(LABEL_ROLE, "holder");
            long seconds = (spec.timeout().toMillis() + 999) / 1000 + ContainerRecipe.BACKSTOP_GRACE_S + HOLDER_GRACE_S;
            made.holderId = clients.control.createContainerCmd(image)
                    .withEntrypoint("sleep", Long.toString(seconds))
                    .withUser(ContainerRecipe.USER)
                    .withLabels(holderLabels)
                    .withHostConfig(HostConfig.newHostConfig()
                            .withCapDrop(Capability.ALL)
                            .withSecurityOpts(List.of("no-new-privileges"))
                            .withReadonlyRootfs(true)
                            .withNetworkMode("none")
                            .withMemory(32L << 20)
                            .withMemorySwap(32L << 20)
                            .withPidsLimit(4L)
                            .withInit(true)
                            .withLogConfig(new LogConfig(LogConfig.LoggingType.NONE))
                            // The image's VOLUMEs: small tmpfs, not an anonymous volume per run
                            // that nothing labels or removes (issue 25, low).
                            .withTmpFs(holderTmpfs(imageVolumes, workdir))
                            .withMounts(List.of(made.mount())))
                    .exec().getId();
            clients.control.startContainerCmd(made.holderId).exec();
            for (TarSource input : spec.files().inputs()) {
                made.put(input);
            }
            return made;
        } catch (RuntimeException e) {
            made.close();
            throw e;
        } catch (IOException e) {
            made.close();
            throw new SandboxException("cannot write the input files of execution " + spec.executionId()
                    + " into its workdir: " + e.getMessage(), e);
        }
    }

    private Mount mount() {
        return new Mount().withType(MountType.VOLUME).withSource(volume).withTarget(workdir);
    }

    /** Extracts a tar into the workdir (as the engine does: chrooted to the container, owners kept). */
    void put(TarSource source) throws IOException {
        try (InputStream tar = source.open()) {
            clients.control.copyArchiveToContainerCmd(holderId)
                    .withRemotePath(workdir)
                    .withTarInputStream(tar)
                    .exec();
        }
    }

    private static Map<String, String> holderTmpfs(Collection<String> imageVolumes, String workdir) {
        Map<String, String> tmpfs = new LinkedHashMap<>();
        for (String volume : imageVolumes) {
            if (!volume.equals(workdir)) {
                tmpfs.put(volume, "rw,noexec,nosuid,nodev,size=1m");
            }
        }
        return tmpfs;
    }

    /** The command's container mounts this volume on its workdir instead of a plain tmpfs. */
    void mountInto(CreateContainerCmd create) {
        HostConfig host = create.getHostConfig();
        Map<String, String> tmpfs = new LinkedHashMap<>(host.getTmpFs() == null ? Map.of() : host.getTmpFs());
        tmpfs.remove(workdir);
        List<Mount> mounts = new ArrayList<>(host.getMounts() == null ? List.of() : host.getMounts());
        mounts.add(mount());
        host.withTmpFs(tmpfs).withMounts(mounts);
    }

    /**
     * Streams {@code path} (relative to the workdir, "" for all) out of the volume, entry by entry.
     *
     * <p>The engine resolves the directories of an archive path inside the container, following
     * links (as root): asked for {@code r/etc/shadow} with {@code r -> /}, it answers the image's
     * own {@code /etc/shadow}. Only the last element of a path is taken as it is. So a deeper
     * path is read from its first element, a direct child of the workdir (a link there comes back
     * as a link, never followed), and only the entries at or under {@code path} are visited: a
     * link at any depth is reported as a link. The price is streaming the rest of that first
     * directory past the visitor.
     */
    void read(String path, WorkdirVisitor visitor) throws IOException {
        int slash = path.indexOf('/');
        if (slash > 0) {
            String first = path.substring(0, slash);
            read(first, (entry, content) -> {
                if (entry.path().equals(path) || entry.path().startsWith(path + "/")) {
                    visitor.visit(entry, content);
                } else if (entry.type() == WorkdirEntry.Type.SYMLINK
                        && path.startsWith(entry.path() + "/")) {
                    // A directory on the path is a link: say so for the path asked for.
                    visitor.visit(new WorkdirEntry(path, entry.type(), 0, entry.mode(),
                            entry.path() + ", a directory on its path, which links to " + entry.linkTarget()), content);
                }
            });
            return;
        }
        String remote = path.isEmpty() ? workdir : workdir + "/" + path;
        // Through the transport, not docker-java's command: a read abandoned halfway (a file over
        // the visitor's limit, a failure) must end the engine's stream, never read it to its end.
        DockerHttpClient.Response response = clients.controlHttp.execute(
                new DockerHttpClient.Request.Builder()
                        .method(DockerHttpClient.Request.Method.GET)
                        .path("/containers/" + holderId + "/archive?path="
                                + URLEncoder.encode(remote, StandardCharsets.UTF_8))
                        .build());
        try {
            int code = response.getStatusCode();
            if (code == 404) {
                return; // nothing at that path
            }
            if (code != 200) {
                throw new IOException("the Docker engine answered " + code + " to reading " + remote + " from "
                        + holderId);
            }
            // The engine states a path's size before its tar: a file over the limit is reported
            // without one byte of it read (a sparse file may claim a petabyte).
            PathStat stat = PathStat.of(response.getHeader("X-Docker-Container-Path-Stat"));
            if (stat != null && stat.regular() && stat.size() > visitor.maxFileBytes() && !path.isEmpty()) {
                visitor.visit(new WorkdirEntry(path, WorkdirEntry.Type.FILE,
                        stat.size(), (int) (stat.mode() & 0777), null), InputStream.nullInputStream());
                return;
            }
            TarEntries.visit(response.getBody(), path, visitor);
        } finally {
            response.close(); // aborts the request first: the rest of the body is never read
        }
    }

    /** The engine's {@code X-Docker-Container-Path-Stat}: base64 of {"name","size","mode","mtime","linkTarget"}. */
    record PathStat(long size, long mode) {
        /** Go's os.ModeType bits: a regular file has none of them. */
        private static final long GO_MODE_TYPE = 0x8F280000L;

        boolean regular() {
            return (mode & GO_MODE_TYPE) == 0;
        }

        static PathStat of(String header) {
            if (header == null || header.isBlank()) {
                return null;
            }
            try {
                JsonNode json = new ObjectMapper()
                        .readTree(Base64.getDecoder().decode(header.strip()));
                return new PathStat(json.path("size").asLong(-1), json.path("mode").asLong(0));
            } catch (IOException | IllegalArgumentException e) {
                return null; // read as before: the tar's own header gives the size
            }
        }
    }

    @Override
    public void close() {
        if (holderId != null) {
            try {
                clients.control.removeContainerCmd(holderId).withForce(true).withRemoveVolumes(true).exec();
            } catch (NotFoundException e) {
                log.debug("holder {} already removed", holderId);
            } catch (RuntimeException e) {
                log.warn("removing workdir holder {} failed; the leftover clean-up removes it", holderId, e);
            }
        }
        removeVolume(clients, volume);
    }

    static void removeVolume(DockerClients clients, String volume) {
        try {
            clients.control.removeVolumeCmd(volume).exec();
        } catch (NotFoundException e) {
            log.debug("volume {} already removed", volume);
        } catch (RuntimeException e) {
            log.warn("removing workdir volume {} failed ({}); the leftover clean-up removes it", volume, e.getMessage());
        }
    }
}
