package io.outrun.dispatch;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jobrunr.server.BackgroundJobServer;
import org.jobrunr.server.JobSteward;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Instant pickup. JobRunr OSS looks for new work only every poll interval (never below 5 s on
 * SQL storage) and has no public wake-up. When a NOTIFY says work was enqueued, this makes the
 * node's {@link JobSteward} onboard now, through the same path JobRunr itself takes when a
 * worker thread frees up: {@code notifyThreadIdle()} runs the onboarding task. It is paired with
 * {@code notifyThreadOccupied()} so the occupied-worker count stays balanced.
 *
 * <p>Bursts coalesce: while one wake-up is pending, further ones are dropped (the pending one
 * will see all the work). Onboardings are spaced by {@link #SPACING_MS}: JobRunr counts a worker
 * as occupied only once its thread starts, so an onboarding right after another would see
 * stale free slots and over-fetch jobs that then wait in this node's queue while other nodes
 * idle. {@code InstantPickupIT} fails if a JobRunr upgrade breaks this.
 */
public final class StewardWake implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(StewardWake.class);

    static final long SPACING_MS = 30;
    /** How long a wake-up's look is retried while other looks hold JobRunr's lock; then the poll finds it. */
    static final long RETRY_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(2);

    private final BackgroundJobServer server;
    private final int slots;
    private final AtomicBoolean pending = new AtomicBoolean();
    /** Off only to measure stock JobRunr polling (bench/): {@code -Doutrun.instantPickup=false}. */
    private final boolean enabled = !"false".equals(System.getProperty("outrun.instantPickup"));
    private final ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "outrun-wake");
        t.setDaemon(true);
        return t;
    });

    private final OnboardingGate gate;
    private final Runnable relay;
    /** A wake-up sent to this node as a free one is pending: relayed if the node is full by then. */
    private final AtomicBoolean pendingAsFree = new AtomicBoolean();

    /** @param relay passes a wake-up on to the other nodes (see {@code Notifier.relayWake}) */
    public StewardWake(BackgroundJobServer server, int slots, OnboardingGate gate, Runnable relay) {
        this.server = server;
        this.slots = slots;
        this.gate = gate;
        this.relay = relay;
    }

    /** Called for every NOTIFY on the wake channel, with its payload; returns at once. */
    public void wake(String payload) {
        // Even when no onboarding follows (no free slot, or disabled): a job's end then looks.
        gate.workMayBeQueued();
        if (io.outrun.notify.Notifier.WAKE_FREE.equals(payload)) {
            pendingAsFree.set(true);
        }
        if (enabled && pending.compareAndSet(false, true)) {
            executor.execute(this::onboard);
        }
    }

    private void onboard() {
        pending.set(false);
        boolean asFree = pendingAsFree.getAndSet(false);
        try {
            if (!server.isRunning()) {
                return;
            }
            JobSteward steward = server.getJobSteward();
            if (steward.getOccupiedWorkerCount() >= slots) {
                // No free slot: this node's next run's end looks for the work. Woken as a free
                // node (its heartbeat lags), it also passes the wake-up on, since the fleet told
                // no other node: one with a free slot takes the work now.
                if (asFree) {
                    relay.run();
                }
                return;
            }
            OnboardingGate.lookedHere(); // cleared: a look that threw earlier may have left it set
            steward.notifyThreadOccupied();
            steward.notifyThreadIdle();
            // JobRunr skips a look while another holds its lock, and that one may have queried before
            // this work committed: look again once it is done, spaced as any two looks are (the
            // jobs that one just handed out count as occupied only once their threads start).
            long giveUp = System.nanoTime() + RETRY_NANOS;
            while (!OnboardingGate.lookedHere() && server.isRunning() && System.nanoTime() < giveUp
                    && steward.getOccupiedWorkerCount() < slots) {
                Thread.sleep(SPACING_MS);
                steward.notifyThreadOccupied();
                steward.notifyThreadIdle();
            }
            // Let the performers just handed work start (and count) before the next onboarding.
            Thread.sleep(SPACING_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.warn("instant pickup failed; the work starts at the next poll", e);
        }
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }
}
