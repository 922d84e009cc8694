package io.outrun.sandbox.docker;

import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Container;
import io.outrun.sandbox.Sandbox.LeftoverPolicy;
import io.outrun.sandbox.SandboxUnavailableException;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What runs left on the engine when their worker died before it could close them: their
 * containers and workdir volumes, found by Outrun's labels and judged by a {@link LeftoverPolicy}
 * (see {@link DockerSandbox#removeLeftovers}). Pooled containers, started ahead of need, are
 * judged by the node process that started them.
 */
final class LeftoverContainers {

    /** DockerSandbox's, as before this class was split from it: operators filter on that name. */
    private static final Logger log = LoggerFactory.getLogger(DockerSandbox.class);

    private final DockerClients clients;
    private final DockerSandboxConfig config;
    /** The incarnation of this sandbox's warm pool now, or null without one. */
    private final Supplier<String> poolIncarnation;

    LeftoverContainers(DockerClients clients, DockerSandboxConfig config, Supplier<String> poolIncarnation) {
        this.clients = clients;
        this.config = config;
        this.poolIncarnation = poolIncarnation;
    }

    /** See {@link DockerSandbox#removeLeftovers}; how many containers were removed. */
    int remove(LeftoverPolicy stillCurrent) {
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
            if (!isCurrent(container, stillCurrent) && removeContainer(clients, container.getId())) {
                removed++;
            }
        }
        removeVolumes(filter, stillCurrent);
        return removed;
    }

    /** Workdir volumes of runs no longer live (their containers are gone by now, or the removal waits for the next round). */
    private void removeVolumes(Map<String, String> filter, LeftoverPolicy stillCurrent) {
        try {
            var answer = clients.control.listVolumesCmd()
                    .withFilter("label", filter.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList())
                    .exec();
            if (answer.getVolumes() == null) {
                return;
            }
            for (var volume : answer.getVolumes()) {
                Map<String, String> labels = volume.getLabels() == null ? Map.of() : volume.getLabels();
                if (ofAnotherDeployment(labels, stillCurrent)) {
                    continue;
                }
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

    /**
     * A pooled container (started ahead of need, so without an execution's labels) stays while
     * the node process it names lives: its own pool's, waiting or running a run, or another
     * live node's.
     */
    private boolean isCurrentPooled(Container container, LeftoverPolicy stillCurrent) {
        String incarnation = container.getLabels().get(ContainerRecipe.LABEL_INCARNATION);
        String ours = poolIncarnation.get();
        if (incarnation == null) {
            return false;
        }
        if (ours != null && incarnation.equals(ours)) {
            return true;
        }
        return stillCurrent.incarnationLive(incarnation);
    }

    /**
     * True for what another deployment sharing this engine made (its own database, its own runs
     * and pools): never judged here, whatever its labels say.
     */
    private static boolean ofAnotherDeployment(Map<String, String> labels, LeftoverPolicy stillCurrent) {
        String theirs = labels == null ? null : labels.get(ContainerRecipe.LABEL_DEPLOYMENT);
        String ours = stillCurrent.deployment();
        return theirs != null && ours != null && !theirs.equals(ours);
    }

    private boolean isCurrent(Container container, LeftoverPolicy stillCurrent) {
        Map<String, String> labels = container.getLabels();
        if (ofAnotherDeployment(labels, stillCurrent)) {
            return true;
        }
        if (labels != null && labels.containsKey(ContainerRecipe.LABEL_POOL)) {
            return isCurrentPooled(container, stillCurrent);
        }
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
    static boolean removeContainer(DockerClients clients, String containerId) {
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
}
