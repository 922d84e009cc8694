package io.outrun.cleanup;

import io.outrun.lease.LeaseKeeper;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxUnavailableException;
import io.outrun.store.ExecutionStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes runs that no node should be running any more: those of a previous process of this
 * node (SIGKILLed workers leave containers behind), of claims handed back or re-driven, and of
 * executions that ended. One definition of dead, by lease epoch (never reused): a run stays
 * while this node tracks that very (execution, epoch) live, while another incarnation holds
 * that epoch's lease (live or within the re-drive grace), or when its execution is unknown here
 * (another fleet, with another database, may share this machine's Docker engine).
 */
public final class LeftoverCleaner {

    private static final Logger LOG = LoggerFactory.getLogger(LeftoverCleaner.class);

    private final Sandbox sandbox;
    private final LeaseKeeper keeper;
    private final ExecutionStore store;
    private volatile boolean engineAway;
    public LeftoverCleaner(Sandbox sandbox, LeaseKeeper keeper, ExecutionStore store) {
        this.sandbox = sandbox;
        this.keeper = keeper;
        this.store = store;
    }

    public void clean() {
        if (!sandbox.engineUp()) {
            // Away (restarting, upgrading): nothing can be listed or removed, and what a live
            // attempt runs must wait for its own verdict once the engine answers. Next round.
            if (!engineAway) {
                LOG.info("the sandbox engine does not answer; leftover clean-up waits for it");
            }
            engineAway = true;
            return;
        }
        engineAway = false;
        try {
            int removed = sandbox.removeLeftovers((id, epoch) ->
                    keeper.isLive(id, epoch) || !store.isStaleRun(id, epoch, keeper.incarnation()));
            if (removed > 0) {
                LOG.info("removed {} leftover runs", removed);
            }
        } catch (SandboxUnavailableException e) {
            LOG.info("leftover clean-up skipped: {}; retrying later", e.getMessage());
        } catch (RuntimeException e) {
            LOG.warn("leftover clean-up failed; retrying later", e);
        }
    }
}
