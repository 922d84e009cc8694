package io.outrun.lease;

import io.outrun.notify.Channels;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.capture.Captured;
import io.outrun.store.ExecutionStore;
import io.outrun.store.ExecutionStore.Renewal;
import io.outrun.store.Lease;
import io.outrun.store.OutputUpdate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
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
    private final Map<UUID, Tracked> runs = new ConcurrentHashMap<>();
    private final java.util.Set<Lease> starting = ConcurrentHashMap.newKeySet();
    /** Cancels heard for runs not tracked (yet); every node hears every cancel, so keep them briefly. */
    private final Map<UUID, Long> earlyCancels = new ConcurrentHashMap<>();
    private static final long EARLY_CANCEL_NANOS = TimeUnit.SECONDS.toNanos(30);
    private final ScheduledExecutorService timer;
    private volatile long lastRenewalNanos = System.nanoTime();

    public LeaseKeeper(ExecutionStore store, String node, Duration ttl, Duration outputFlush) {
        this.store = store;
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

    /** Marks an attempt as starting here, so leftover clean-up leaves its fresh container alone. */
    public void reserve(Lease lease) {
        starting.add(lease);
    }

    public Tracked track(Lease lease, Run run) {
        Tracked tracked = new Tracked(lease, run);
        runs.put(lease.executionId(), tracked);
        if (earlyCancels.remove(lease.executionId()) != null) {
            tracked.requestCancel();
        }
        return tracked;
    }

    public void untrack(Lease lease) {
        runs.remove(lease.executionId());
        starting.remove(lease);
    }

    /** True while this node runs that attempt (leftover clean-up must not touch it). */
    public boolean isRunning(UUID executionId, int attempt) {
        Tracked t = runs.get(executionId);
        return (t != null && t.lease().attempt() == attempt)
                || starting.stream().anyMatch(l -> l.executionId().equals(executionId) && l.attempt() == attempt);
    }

    public int size() {
        return runs.size();
    }

    /** An owner asked to cancel (NOTIFY): kill now if it runs here; the worker writes the end. */
    public void cancel(UUID executionId) {
        Tracked t = runs.get(executionId);
        if (t != null) {
            t.requestCancel();
            return;
        }
        // Maybe claimed here a moment ago and not tracked yet: remember it briefly for track().
        long now = System.nanoTime();
        earlyCancels.values().removeIf(at -> now - at > EARLY_CANCEL_NANOS);
        earlyCancels.put(executionId, now);
    }

    private void renewQuietly() {
        try {
            renew();
        } catch (RuntimeException e) {
            long silentNanos = System.nanoTime() - lastRenewalNanos;
            if (silentNanos > ttl.toNanos()) {
                LOG.error("no lease renewed for {} ms (longer than the ttl): stepping down from {} runs", silentNanos / 1_000_000, runs.size(), e);
                runs.values().forEach(Tracked::loseLease);
            } else {
                LOG.warn("lease renewal failed; retrying at the next beat", e);
            }
        }
    }

    void renew() {
        List<Tracked> snapshot = new ArrayList<>(runs.values());
        Renewal renewal = store.renew(node, ttl, snapshot.stream().map(Tracked::lease).collect(Collectors.toList()));
        lastRenewalNanos = System.nanoTime();
        for (Tracked t : snapshot) {
            UUID id = t.lease().executionId();
            if (!renewal.held().contains(id)) {
                // Fenced out: the row was re-driven or reaped. Kill, and let the job write nothing.
                // (A run whose end is being written has just given its lease up itself.)
                if (runs.containsKey(id) && !t.ending()) {
                    LOG.warn("lost the lease of execution {} attempt {}: killing its run", id, t.lease().attempt());
                    t.loseLease();
                }
            } else if (renewal.cancelRequested().contains(id) && !t.cancelRequested()) {
                LOG.info("execution {} was cancelled by its owner: killing its run", id);
                t.requestCancel();
            }
        }
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
                t.flushedStdout = out.totalBytes();
                t.flushedStderr = err.totalBytes();
            }
        }
        if (updates.isEmpty()) {
            return;
        }
        store.flushOutput(updates);
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
