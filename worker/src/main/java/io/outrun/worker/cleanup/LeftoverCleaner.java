package io.outrun.worker.cleanup;

import io.outrun.core.store.Heartbeat;
import io.outrun.core.store.StoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import io.outrun.worker.lease.LeaseKeeper;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxUnavailableException;
import io.outrun.worker.lease.LeaseStore;
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
    private final LeaseStore store;
    private final DataSource db;
    private final Duration liveWithin;
    private final String deployment;
    private volatile boolean engineAway;

    public LeftoverCleaner(Sandbox sandbox, LeaseKeeper keeper, LeaseStore store) {
        this(sandbox, keeper, store, null, Duration.ZERO, null);
    }

    /**
     * @param db         where the nodes' heartbeats are read, for what a sandbox started ahead of
     *                   need for a node process (a warm pool): kept while that process beats
     * @param liveWithin a node process that has not beaten for this long is gone
     * @param deployment this node's deployment: what another deployment made is never judged
     */
    public LeftoverCleaner(Sandbox sandbox, LeaseKeeper keeper, LeaseStore store, DataSource db, Duration liveWithin,
                           String deployment) {
        this.deployment = deployment;
        this.sandbox = sandbox;
        this.keeper = keeper;
        this.store = store;
        this.db = db;
        this.liveWithin = liveWithin;
    }

    public void clean() {
        int stale = keeper.pruneStaleFiles(LeaseKeeper.STALE_FILE_AGE);
        if (stale > 0) {
            LOG.info("removed {} stale lease files (untouched for over {} minutes)", stale,
                    LeaseKeeper.STALE_FILE_AGE.toMinutes());
        }
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
            int removed = sandbox.removeLeftovers(new Sandbox.LeftoverPolicy() {
                private Set<String> live;

                @Override
                public boolean isCurrent(UUID id, long epoch) {
                    return keeper.isLive(id, epoch) || !store.isStaleRun(id, epoch, keeper.incarnation());
                }

                @Override
                public String deployment() {
                    return deployment;
                }

                @Override
                public boolean incarnationLive(String incarnation) {
                    if (incarnation.equals(keeper.incarnation())) {
                        return true;
                    }
                    if (db == null) {
                        return true; // cannot tell: keep
                    }
                    if (live == null) {
                        live = liveIncarnations(); // once per round, and only when a foreign pool is seen
                    }
                    return live.contains(incarnation);
                }
            });
            if (removed > 0) {
                LOG.info("removed {} leftover runs", removed);
            }
        } catch (SandboxUnavailableException e) {
            LOG.info("leftover clean-up skipped: {}; retrying later", e.getMessage());
        } catch (RuntimeException e) {
            LOG.warn("leftover clean-up failed; retrying later", e);
        }
    }

    private Set<String> liveIncarnations() {
        try (Connection c = db.getConnection()) {
            Set<String> live = new HashSet<>();
            Heartbeat.live(c, liveWithin).forEach(n -> live.add(n.incarnation()));
            return live;
        } catch (SQLException e) {
            throw new StoreException("cannot read the live nodes", e);
        }
    }
}
