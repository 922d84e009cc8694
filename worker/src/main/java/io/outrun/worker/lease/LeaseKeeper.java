package io.outrun.worker.lease;

import io.outrun.core.execution.Execution;
import io.outrun.core.store.Chunk;
import io.outrun.core.store.Heartbeat;
import io.outrun.core.store.Lease;
import io.outrun.core.store.OutputStore;
import io.outrun.core.store.OutputUpdate;
import io.outrun.sandbox.Run;
import io.outrun.worker.metrics.NodeMetrics;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's leases, and the three switches that keep a command from ever running beside its
 * own next attempt:
 * <ul>
 *   <li><b>The heartbeat</b> (on the node's direct connection, every ttl/3): one statement renews
 *   every lease; an answer sets flags (lost, cancel requested), never calls the engine.</li>
 *   <li><b>The watchdog</b> (a thread that does no I/O but hand kills to the killer thread): each
 *   attempt's deadline is the send time of its last <i>confirmed</i> renewal plus ttl minus a
 *   margin; past it the lease may have lapsed, so the run is killed. A kill is re-sent every
 *   second until the run is gone.</li>
 *   <li><b>The kill switch outside the JVM</b>, for a paused or wedged worker: each run watches
 *   its lease file (written here at each confirmed renewal: the wall-clock second past which it
 *   must die) and kills itself once that moment passes (see the sandboxes).</li>
 * </ul>
 * The sweep re-drives a lease only {@link Lease#REDRIVE_GRACE_MS} after it expired, so, whatever
 * happened to this JVM, the old run is dead before the next attempt can start.
 */
public final class LeaseKeeper implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(LeaseKeeper.class);
    private static final long WATCH_MS = 100;
    private static final long KILL_RESEND_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** The run's own kill switch fires this long before the lease's ttl runs out. */
    private static final long KILL_SWITCH_LEAD_MS = 1000;
    private static final long EARLY_CANCEL_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final String incarnation;
    private final String nodeId;
    private final String version;
    private final String wakeChannel;
    private final int slots;
    private final Duration ttl;
    private final long marginNanos;
    private final int statementTimeoutSeconds;
    private final Path leaseDir;
    private final NodeMetrics metrics;
    private final Map<Lease, Attempt> attempts = new ConcurrentHashMap<>();
    /** Cancels heard for runs not claimed here (yet); every node hears every cancel, so keep them briefly. */
    private final Map<UUID, Long> earlyCancels = new ConcurrentHashMap<>();
    private final ScheduledExecutorService watchdog;
    private final ExecutorService killer;
    private volatile long lastBeatNanos = System.nanoTime();
    private final CountDownLatch firstBeat = new CountDownLatch(1);
    private volatile long sweeperUntilNanos;
    private volatile boolean draining;
    private volatile boolean drainRequested;

    /**
     * @param leaseDir where runs' lease files live; the engine must see the same path (bind mounts)
     */
    public LeaseKeeper(String incarnation, String nodeId, String version, String wakeChannel, int slots, Duration ttl,
                       Path leaseDir, NodeMetrics metrics) {
        this.incarnation = incarnation;
        this.nodeId = nodeId;
        this.version = version;
        this.wakeChannel = wakeChannel;
        this.slots = slots;
        this.ttl = ttl;
        this.marginNanos = ttl.toNanos() / 4;
        this.statementTimeoutSeconds = (int) Math.max(1, statementTimeout(ttl).toSeconds());
        this.leaseDir = leaseDir;
        this.metrics = metrics;
        try {
            Files.createDirectories(leaseDir);
        } catch (IOException e) {
            throw new IllegalStateException("cannot create the lease file directory " + leaseDir + ": " + e.getMessage(), e);
        }
        this.watchdog = Executors.newSingleThreadScheduledExecutor(daemon("outrun-watchdog"));
        this.killer = Executors.newSingleThreadExecutor(daemon("outrun-killer"));
        watchdog.scheduleWithFixedDelay(this::watch, WATCH_MS, WATCH_MS, TimeUnit.MILLISECONDS);
    }

    /** The bound of every statement on the heartbeat's connection: it answers or fails well within the ttl. */
    public static Duration statementTimeout(Duration ttl) {
        return Duration.ofMillis(Math.max(1000, ttl.toMillis() / 4));
    }

    private static ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    public String incarnation() {
        return incarnation;
    }

    /**
     * A claim of this node is starting: renewed from now on; its lease file is written (the run's
     * kill switch reads it from its first second). {@code claimSentNanos}: when the claim was sent.
     */
    public Attempt begin(Execution claimed, long claimSentNanos) {
        Attempt a = new Attempt(Attempt.leaseOf(claimed), claimed.maxOutputBytes(), claimSentNanos + ttl.toNanos() - marginNanos);
        writeLeaseFile(a, System.currentTimeMillis() - (System.nanoTime() - claimSentNanos) / 1_000_000);
        attempts.put(a.lease(), a);
        Long cancelAt = earlyCancels.remove(claimed.id());
        if (cancelAt != null || claimed.cancelRequested()) {
            a.requestCancel();
        }
        return a;
    }

    /** Its run started; a loss or a cancel heard meanwhile gets it killed by the watchdog. */
    public void started(Attempt a, Run run) {
        a.started(run);
    }

    /** Forgets the attempt (its run ended and is closed, or never started). */
    public void end(Attempt a) {
        a.done();
        attempts.remove(a.lease(), a);
        try {
            Files.deleteIfExists(leaseFile(a.lease()));
        } catch (IOException e) {
            LOG.debug("cannot delete the lease file of {}: {}", a, e.toString());
        }
    }

    /** Removes the lease files no run needs any more: see {@link LeaseFiles#pruneStale}. */
    public int pruneStaleFiles(Duration age) {
        return LeaseFiles.pruneStale(leaseDir, age);
    }

    /** How long a lease file may stay untouched before {@link #pruneStaleFiles} removes it. */
    public static final Duration STALE_FILE_AGE = Duration.ofMinutes(70);

    /** The file whose content is the run's deadline (wall-clock epoch seconds). */
    public Path leaseFile(Lease lease) {
        return leaseDir.resolve(lease.executionId() + "." + lease.epoch());
    }

    /** True while this node runs or starts that run (leftover clean-up must not touch it). */
    public boolean isLive(UUID executionId, long epoch) {
        for (Attempt a : attempts.values()) {
            if (a.lease().executionId().equals(executionId) && a.lease().epoch() == epoch && a.state() != Attempt.State.DONE) {
                return true;
            }
        }
        return false;
    }

    /** Runs claimed here and not yet forgotten. */
    public int size() {
        return attempts.size();
    }

    /** Time since the heartbeat last confirmed this node's leases (it beats every ttl/3, leases or not). */
    public Duration sinceLastRenewal() {
        return Duration.ofNanos(System.nanoTime() - lastBeatNanos);
    }

    /** Waits until a beat has made this node known to the fleet (its row in {@code nodes}). */
    public boolean awaitFirstBeat(Duration within) throws InterruptedException {
        return firstBeat.await(within.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** True while this node holds the fleet's sweep (confirmed by a recent beat). */
    public boolean isSweeper() {
        return System.nanoTime() - sweeperUntilNanos < 0;
    }

    /** From now on the node claims nothing; its beats say so (no node wakes it for new work). */
    public void setDraining(boolean value) {
        draining = value;
    }

    public boolean isDraining() {
        return draining;
    }

    /** Someone asked this node to drain ({@code outrun drain}); its beat read the request. */
    public boolean drainRequested() {
        return drainRequested;
    }

    /** The drain's time is up: every run still here is killed and handed back by its job. */
    public int handBackAll() {
        int n = 0;
        for (Attempt a : attempts.values()) {
            if (a.drain()) {
                LOG.warn("{}: the node's drain time is up; killing its run and handing it back (no attempt spent)", a);
                n++;
            }
        }
        return n;
    }

    /** An owner asked to cancel (NOTIFY): flag the run if it runs here; the watchdog kills it. */
    public void cancel(UUID executionId) {
        boolean found = false;
        for (Attempt a : attempts.values()) {
            if (a.lease().executionId().equals(executionId)) {
                if (a.requestCancel()) {
                    LOG.info("{} was cancelled by its owner: killing its run", a);
                }
                found = true;
            }
        }
        if (!found) {
            // Maybe claimed here a moment ago and not tracked yet: remember it briefly for begin().
            long now = System.nanoTime();
            earlyCancels.values().removeIf(at -> now - at > EARLY_CANCEL_NANOS);
            earlyCancels.put(executionId, now);
        }
    }

    /** One beat on the node's direct connection; sets flags only. */
    public void beat(Connection c) throws SQLException {
        long ending = 2 * ttl.toNanos();
        long now = System.nanoTime();
        List<Attempt> asked = new ArrayList<>();
        for (Attempt a : attempts.values()) {
            boolean renewable = switch (a.state()) {
                case STARTING, RUNNING -> true;
                // An end being written is renewed a while, not for ever: the end write is bounded.
                case ENDING -> now - a.endingSinceNanos() < ending;
                case DONE -> false;
            };
            if (renewable && !a.leaseLost()) {
                asked.add(a);
            }
        }
        long sent = System.nanoTime();
        long wallSent = System.currentTimeMillis();
        Heartbeat.Answer answer;
        try {
            answer = Heartbeat.beat(c, new Heartbeat.NodeState(incarnation, nodeId, version, wakeChannel, slots,
                    attempts.size(), draining), ttl, asked.stream().map(Attempt::lease).toList(), statementTimeoutSeconds);
        } catch (SQLException e) {
            sweeperUntilNanos = sent;
            LOG.warn("heartbeat failed ({}); {} runs die at their deadlines unless a beat gets through", e.getMessage(),
                    asked.size());
            throw e;
        }
        lastBeatNanos = sent;
        firstBeat.countDown();
        sweeperUntilNanos = answer.sweeper() && !draining ? sent + ttl.toNanos() / 2 : sent;
        drainRequested = answer.drainRequested();
        for (Attempt a : asked) {
            if (answer.renewed().contains(a.lease())) {
                a.confirmed(sent + ttl.toNanos() - marginNanos);
                writeLeaseFile(a, wallSent);
                if (answer.cancelRequested().contains(a.lease()) && a.requestCancel()) {
                    LOG.info("{} was cancelled by its owner: killing its run", a);
                }
            } else if (a.state() != Attempt.State.ENDING && a.loseLease("its lease is gone (re-driven or reaped)")) {
                // (A run whose end is being written has just given its lease up itself.)
                metrics.leaseLost();
                LOG.warn("lost the lease of {}: killing its run", a);
            }
        }
    }

    /** Appends the new output of every run in one statement on the node's direct connection. */
    public void flush(Connection c) throws SQLException {
        List<OutputUpdate> updates = new ArrayList<>();
        List<Attempt> flushed = new ArrayList<>();
        List<OutputTracker.Next[]> nexts = new ArrayList<>();
        for (Attempt a : attempts.values()) {
            Run run = a.run();
            if (a.state() != Attempt.State.RUNNING || a.leaseLost() || run == null) {
                continue;
            }
            OutputTracker.Next out = a.stdout.next(a.lease(), run);
            OutputTracker.Next err = a.stderr.next(a.lease(), run);
            if (out.isEmpty() && err.isEmpty()) {
                continue;
            }
            List<Chunk> chunks = new ArrayList<>(out.chunks());
            chunks.addAll(err.chunks());
            updates.add(new OutputUpdate(a.lease(), chunks, out.dropBelow(), err.dropBelow()));
            flushed.add(a);
            nexts.add(new OutputTracker.Next[] {out, err});
        }
        if (updates.isEmpty()) {
            return;
        }
        long sent = System.nanoTime();
        Set<UUID> written = OutputStore.append(c, incarnation, updates);
        long answered = System.nanoTime();
        // Only once written: a failed flush is sent again at the next one even if the run goes quiet.
        for (int i = 0; i < flushed.size(); i++) {
            Attempt a = flushed.get(i);
            if (written.contains(a.lease().executionId()) || updates.get(i).chunks().isEmpty()) {
                a.stdout.stored(nexts.get(i)[0]);
                a.stderr.stored(nexts.get(i)[1]);
                a.trace().flushed(sent, answered, updates.get(i).chunks().stream().mapToLong(k -> k.data().length).sum());
            }
        }
    }

    /** No I/O of its own: deadlines and kills, handed to the killer thread. */
    void watch() {
        long now = System.nanoTime();
        for (Attempt a : attempts.values()) {
            if (a.state() == Attempt.State.DONE) {
                continue;
            }
            if (!a.leaseLost() && a.state() != Attempt.State.ENDING && now - a.deadlineNanos() > 0
                    && a.loseLease("no renewal confirmed in time (ttl " + ttl.toMillis() + " ms)")) {
                metrics.leaseLost();
                LOG.error("{}: no lease renewal confirmed in time; killing its run before the sweep can re-drive it", a);
            }
            if (a.wantsKill() && a.state() == Attempt.State.RUNNING && !a.killInFlight && now - a.lastKillNanos > KILL_RESEND_NANOS) {
                a.killInFlight = true;
                a.lastKillNanos = now;
                try {
                    killer.execute(() -> {
                        try {
                            if (!a.run().kill()) {
                                LOG.warn("{}: the kill did not reach the sandbox; sending it again", a);
                            }
                        } catch (RuntimeException e) {
                            LOG.warn("{}: kill failed; sending it again", a, e);
                        } finally {
                            a.killInFlight = false;
                        }
                    });
                } catch (RejectedExecutionException e) {
                    a.killInFlight = false; // closing
                }
            }
        }
    }

    private void writeLeaseFile(Attempt a, long wallSentMillis) {
        long deadlineSeconds = (wallSentMillis + ttl.toMillis() - KILL_SWITCH_LEAD_MS) / 1000;
        // The switch kills once the clock passes that second (checked each second): from then on a
        // SIGKILL exit may be its doing.
        a.killSwitchAt((deadlineSeconds + 1) * 1000);
        LeaseFiles.write(leaseFile(a.lease()), deadlineSeconds, a);
    }

    @Override
    public void close() {
        watchdog.shutdownNow();
        killer.shutdownNow();
    }
}
