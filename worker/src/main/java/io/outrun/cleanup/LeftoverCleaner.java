package io.outrun.cleanup;

import io.outrun.lease.LeaseKeeper;
import io.outrun.sandbox.Sandbox;
import io.outrun.store.ExecutionStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes runs that no node should be running any more: those of a previous process of this
 * node (SIGKILLed workers leave containers behind), of attempts re-driven elsewhere, and of
 * executions that ended. A run stays while this node runs it, while another node holds a live
 * lease on that very attempt, or when its execution is unknown here (another fleet, with
 * another database, may share this machine's Docker engine or process table).
 */
public final class LeftoverCleaner {

    private static final Logger LOG = LoggerFactory.getLogger(LeftoverCleaner.class);

    private final Sandbox sandbox;
    private final LeaseKeeper keeper;
    private final ExecutionStore store;
    private final String node;

    public LeftoverCleaner(Sandbox sandbox, LeaseKeeper keeper, ExecutionStore store, String node) {
        this.sandbox = sandbox;
        this.keeper = keeper;
        this.store = store;
        this.node = node;
    }

    public void clean() {
        try {
            int removed = sandbox.removeLeftovers((id, attempt) ->
                    keeper.isRunning(id, attempt) || !store.isStaleAttempt(id, attempt, node));
            if (removed > 0) {
                LOG.info("removed {} leftover runs", removed);
            }
        } catch (RuntimeException e) {
            LOG.warn("leftover clean-up failed; retrying later", e);
        }
    }
}
