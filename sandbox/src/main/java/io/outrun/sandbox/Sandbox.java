package io.outrun.sandbox;

import java.nio.file.Path;
import java.util.UUID;

/**
 * Runs one command at a time per {@link Run}, isolated as well as the backend can.
 *
 * <p>Backends: {@code docker} (one locked-down container per run) and {@code process} (a host
 * process in its own process group, for local development only: it offers no isolation).
 * Implementations are thread-safe; one instance serves every run of a node.
 */
public interface Sandbox extends AutoCloseable {

    /** The backend's short name, as given to {@code --sandbox}. */
    String name();

    /**
     * Checks at node start that the backend can run anything at all (engine reachable, image
     * present, bash inside). Throws {@link SandboxUnavailableException} naming what is missing.
     */
    void verify();

    /** Starts the command of {@code spec}; the returned run is already executing. */
    Run start(RunSpec spec);

    /**
     * Removes what earlier runs of this node left behind (a SIGKILLed worker leaves its
     * containers running). {@code stillCurrent} answers whether an (execution, lease epoch) pair
     * is still a live run; everything else is killed and removed.
     *
     * @return how many leftovers were removed
     */
    default int removeLeftovers(LeftoverPolicy stillCurrent) {
        return 0;
    }

    /**
     * False while the backend's engine is known not to answer (restarting, stopped): as last seen,
     * without calling it. A backend without an engine is always up.
     */
    default boolean engineUp() {
        return true;
    }

    /** How many times the backend lost its engine since it started. */
    default long engineLosses() {
        return 0;
    }

    /**
     * Called once by the node that owns this sandbox, after it has its identity: lets a backend
     * get ready for that node's runs ahead of need (the Docker sandbox starts its warm pool).
     */
    default void prepare(NodeShape node) {
    }

    /**
     * What a node's runs look like unless a submission asks otherwise.
     *
     * @param incarnation the node's incarnation (node id and per-process id): what a backend
     *                    starts ahead of need is labelled with it, so a clean-up can tell when its
     *                    process is gone
     * @param limits      the node's default limits
     * @param slots       runs at once
     * @param leaseDir    where the node's lease files live (the engine must see the same path)
     * @param deployment  the deployment the node belongs to (one per database), which everything
     *                    it starts carries, so that its clean-up never judges another deployment's
     *                    runs on a shared engine; null: unknown (tests)
     */
    record NodeShape(String incarnation, Limits limits, int slots, Path leaseDir, String deployment) {
        public NodeShape(String incarnation, Limits limits, int slots, Path leaseDir) {
            this(incarnation, limits, slots, leaseDir, null);
        }
    }

    @Override
    default void close() {
    }

    /** Decides whether a leftover run found by {@link #removeLeftovers} may stay. */
    @FunctionalInterface
    interface LeftoverPolicy {
        boolean isCurrent(UUID executionId, long epoch);

        /**
         * Whether the node process {@code incarnation} still lives (beats), for what a backend
         * started ahead of need and labelled with it. By default: assumed alive, kept.
         */
        default boolean incarnationLive(String incarnation) {
            return true;
        }

        /**
         * This node's deployment (see {@link NodeShape#deployment}): what another deployment
         * started is never removed, whatever its labels say. Null: unknown, judge every run.
         */
        default String deployment() {
            return null;
        }
    }
}
