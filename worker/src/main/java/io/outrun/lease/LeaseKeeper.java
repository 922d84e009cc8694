package io.outrun.lease;

import io.outrun.metrics.NodeMetrics;
import io.outrun.notify.Channels;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.capture.Captured;
import io.outrun.store.ExecutionStore;
import io.outrun.store.ExecutionStore.Renewal;
import io.outrun.store.Lease;
import io.outrun.store.OutputUpdate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's heartbeat. One thread, whatever the number of runs: every {@code outputFlush} it
 * writes the new output of all runs in one batch; every ttl/3 it renews all leases in one
 * statement. A lease missing from the renewal is lost: its run is killed at once and its job
 * writes nothing more. When the database cannot be reached for a whole ttl, every lease is
 * surely expired, so the node steps down from all of them.
 */
public final class LeaseKeeper implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(LeaseKeeper.class);

    private final ExecutionStore store;
    private final String node;
    private final Duration ttl;
    /**
     * Keyed by lease (execution and attempt), not by execution: two attempts of one execution can
     * meet on one node (the old one not yet noticed as lost), and each must only ever touch its own.
     */
    private final Map<Lease, Tracked> runs = new ConcurrentHashMap<>();
    /** Claimed here, sandbox still starting: renewed like runs; the value turns true if the lease was lost meanwhile. */
    private final Map<Lease, AtomicBoolean> starting = new ConcurrentHashMap<>();
    /** Cancels heard for runs not tracked (yet); every node hears every cancel, so keep them briefly. */
    private final Map<UUID, Long> earlyCancels = new ConcurrentHashMap<>();
    private static final long EARLY_CANCEL_NANOS = TimeUnit.SECONDS.toNanos(30);
    private final ScheduledExecutorService timer;
    private volatile long lastRenewalNanos = System.nanoTime();
    private final NodeMetrics metrics;

    public LeaseKeeper(ExecutionStore store, String node, Duration ttl, Duration outputFlush, NodeMetrics metrics) {
        this.store = store;
        this.metrics = metrics;
        this.node = node;
        this.ttl = ttl;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "outrun-heartbeat");
            t.setDaemon(true);
            return t;
        });
        long beat = ttl.toMillis() / 3;
        timer.scheduleWithFixedDelay(this::renewQuietly, beat, beat, TimeUnit.MILLISECONDS);
        timer.scheduleWithFixedDelay(this::flushQuietly, outputFlush.toMillis(), outputFlush.toMillis(), TimeUnit.MILLISECONDS);
    }

    /**
     * Marks an attempt as starting here: its lease is renewed while the sandbox starts (which can
     * outlast the ttl), and leftover clean-up leaves its fresh container alone.
     */
    public synchronized void reserve(Lease lease) {
        starting.put(lease, new AtomicBoolean());
    }

    /**
     * The run of a reserved attempt has started. If its lease was lost while it started, or is
     * lost later, the run is killed and its job writes nothing. Of two attempts of one execution
     * on this node only the newer can hold the lease (a new attempt is claimed only once the old
     * one's lease is gone), so the older one is killed, whichever of them is tracked last.
     */
    public synchronized Tracked track(Lease lease, Run run) {
        Tracked tracked = new Tracked(lease, run);
        AtomicBoolean lostWhileStarting = starting.remove(lease);
        boolean newerHere = false;
        for (Tracked other : runs.values()) {
            if (!other.lease().executionId().equals(lease.executionId()) || other.ending()) {
                continue;
            }
            if (other.lease().attempt() < lease.attempt()) {
                LOG.warn("execution {}: attempt {} is still here while attempt {} starts: killing the stale one",
                        lease.executionId(), other.lease().attempt(), lease.attempt());
                loseLease(other);
            } else {
                newerHere = true;
            }
        }
        runs.put(lease, tracked);
        if (newerHere || (lostWhileStarting != null && lostWhileStarting.get())) {
            LOG.warn("execution {} attempt {} lost its lease while its run started (or a newer attempt runs here): killing it",
                    lease.executionId(), lease.attempt());
            loseLease(tracked);
        } else if (earlyCancels.remove(lease.executionId()) != null) {
            tracked.requestCancel();
        }
        return tracked;
    }

    private void loseLease(Tracked t) {
        if (!t.leaseLost()) {
            metrics.leaseLost();
        }
        t.loseLease();
    }

    /** Forgets this attempt, and only this one. */
    public synchronized void untrack(Lease lease) {
        runs.remove(lease);
        starting.remove(lease);
    }

    /** True while this node runs or starts that attempt (leftover clean-up must not touch it). */
    public boolean isRunning(UUID executionId, int attempt) {
        Lease lease = new Lease(executionId, attempt, node);
        return runs.containsKey(lease) || starting.containsKey(lease);
    }

    public int size() {
        return runs.size();
    }

    /** Time since the heartbeat last renewed this node's leases (it beats every ttl/3, leases or not). */
    public Duration sinceLastRenewal() {
        return Duration.ofNanos(System.nanoTime() - lastRenewalNanos);
    }

    /** An owner asked to cancel (NOTIFY): kill now if it runs here; the worker writes the end. */
    public void cancel(UUID executionId) {
        boolean found = false;
        for (Tracked t : runs.values()) {
            if (t.lease().executionId().equals(executionId)) {
                t.requestCancel();
                found = true;
            }
        }
        if (!found) {
            // Maybe claimed here a moment ago and not tracked yet: remember it briefly for track().
            long now = System.nanoTime();
            earlyCancels.values().removeIf(at -> now - at > EARLY_CANCEL_NANOS);
            earlyCancels.put(executionId, now);
        }
    }

    private void renewQuietly() {
        try {
            renew();
        } catch (RuntimeException e) {
            long silentNanos = System.nanoTime() - lastRenewalNanos;
            if (silentNanos > ttl.toNanos()) {
                LOG.error("no lease renewed for {} ms (longer than the ttl): stepping down from {} runs", silentNanos / 1_000_000, runs.size(), e);
                stepDown();
            } else {
                LOG.warn("lease renewal failed; retrying at the next beat", e);
            }
        }
    }

    private synchronized void stepDown() {
        runs.values().stream().filter(t -> !t.ending()).forEach(this::loseLease);
        starting.values().forEach(lost -> lost.set(true));
    }

    void renew() {
        // The answer comes back after the lock is released: act on it only for the very run or
        // reservation it was asked for (an equal lease may have been untracked and claimed again
        // meanwhile, since a hand-back gives its attempt number back).
        Map<Lease, Tracked> askedRuns;
        Map<Lease, AtomicBoolean> askedStarting;
        synchronized (this) {
            askedRuns = new HashMap<>(runs);
            askedStarting = new HashMap<>(starting);
        }
        List<Lease> leases = new ArrayList<>(askedRuns.keySet());
        leases.addAll(askedStarting.keySet());
        Renewal renewal = store.renew(node, ttl, leases);
        lastRenewalNanos = System.nanoTime();
        synchronized (this) {
            for (Lease lease : leases) {
                Tracked t = stillHere(askedRuns.get(lease), runs.get(lease));
                AtomicBoolean startingLost = stillHere(askedStarting.get(lease), starting.get(lease));
                if (t == null && startingLost == null) {
                    continue; // ended, or replaced by a newer claim, since the question was asked
                }
                if (!renewal.held().contains(lease)) {
                    // Fenced out: the row was re-driven or reaped. Kill, and let the job write nothing.
                    // (A run whose end is being written has just given its lease up itself.)
                    if (t != null && !t.ending()) {
                        LOG.warn("lost the lease of execution {} attempt {}: killing its run", lease.executionId(), lease.attempt());
                        loseLease(t);
                    } else if (startingLost != null) {
                        startingLost.set(true);
                    }
                } else if (renewal.cancelRequested().contains(lease)) {
                    if (t != null && !t.cancelRequested()) {
                        LOG.info("execution {} was cancelled by its owner: killing its run", lease.executionId());
                        t.requestCancel();
                    } else if (startingLost != null) {
                        earlyCancels.put(lease.executionId(), System.nanoTime());
                    }
                }
            }
        }
    }

    /** What was asked about, if it is still the very same object now; else null. */
    private static <T> T stillHere(T asked, T now) {
        return asked != null && asked == now ? asked : null;
    }

    private void flushQuietly() {
        try {
            flush();
        } catch (RuntimeException e) {
            LOG.warn("output flush failed; retrying at the next flush", e);
        }
    }

    void flush() {
        List<OutputUpdate> updates = new ArrayList<>();
        List<Tracked> flushed = new ArrayList<>();
        for (Tracked t : runs.values()) {
            Captured out = t.run().stdout();
            Captured err = t.run().stderr();
            if (out.totalBytes() != t.flushedStdout || err.totalBytes() != t.flushedStderr) {
                updates.add(new OutputUpdate(t.lease(), out, err));
                flushed.add(t);
            }
        }
        if (updates.isEmpty()) {
            return;
        }
        store.flushOutput(updates);
        // Only once written: a failed flush is retried at the next one even if the run goes quiet.
        for (int i = 0; i < flushed.size(); i++) {
            flushed.get(i).flushedStdout = updates.get(i).stdout().totalBytes();
            flushed.get(i).flushedStderr = updates.get(i).stderr().totalBytes();
        }
        // NOTIFY payloads stop at 8000 bytes: 200 ids of 37 characters each fit.
        for (int i = 0; i < flushed.size(); i += 200) {
            store.notify(Channels.CHANGED, flushed.subList(i, Math.min(flushed.size(), i + 200)).stream()
                    .map(t -> t.lease().executionId().toString()).collect(Collectors.joining(",")));
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
