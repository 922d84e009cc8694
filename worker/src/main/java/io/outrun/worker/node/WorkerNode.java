package io.outrun.worker.node;

import static org.jobrunr.server.BackgroundJobServerConfiguration.usingStandardBackgroundJobServerConfiguration;

import io.outrun.core.books.JobBooks;
import io.outrun.core.books.ServerWatch;
import io.outrun.core.config.ConfigException;
import io.outrun.core.notify.Listener;
import io.outrun.core.owner.OwnerLimits;
import io.outrun.core.service.Core;
import io.outrun.core.store.Channels;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.core.store.Heartbeat;
import io.outrun.core.store.ScheduleStore;
import io.outrun.core.store.WebhookStore;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.Sandbox;
import io.outrun.worker.attempt.AttemptRunner;
import io.outrun.worker.attempt.EndWriter;
import io.outrun.worker.attempt.RunPreparation;
import io.outrun.worker.attempt.StdinFeeds;
import io.outrun.worker.cleanup.LeftoverCleaner;
import io.outrun.worker.dispatch.ClaimLoop;
import io.outrun.worker.lease.LeaseKeeper;
import io.outrun.worker.lease.LeaseStore;
import io.outrun.worker.maintenance.Maintenance;
import io.outrun.worker.maintenance.Periodic;
import io.outrun.worker.metrics.NodeMetrics;
import io.outrun.core.books.JobRunrStorage;
import io.outrun.worker.schedule.ScheduleClock;
import io.outrun.worker.webhook.WebhookSender;
import java.io.UncheckedIOException;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.UUID;
import org.jobrunr.dashboard.JobRunrDashboardWebServer;
import org.jobrunr.server.BackgroundJobServer;
import org.jobrunr.server.JobActivator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One worker node: its claim loop (which takes queued executions fairly and runs each in this
 * node's sandbox), the node's heartbeat, the books it keeps on JobRunr's jobs, a JobRunr server
 * (the dashboard's registry of nodes and JobRunr's housekeeping; it runs no job), the fleet's
 * re-drive sweep (one node at a time) and the clean-up of leftover runs.
 */
public final class WorkerNode implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(WorkerNode.class);

    private final WorkerConfig config;
    private final Core core;
    /** Claims and the writes fenced by their leases: this node's side of the executions. */
    private final LeaseStore leases;
    private final boolean ownsCore;
    private final Sandbox sandbox;
    private final NodeMetrics metrics;
    /** What this node's runs are given of it: its egress proxy, its way to Outrun's API (issue 31). */
    private RunPreparation preparation;
    // Set as each part starts; close() stops those set, so a failed start undoes exactly what it did.
    private LeaseKeeper keeper;
    private volatile BackgroundJobServer server;
    private JobBooks books;
    private ServerWatch serverWatch;
    private ClaimLoop loop;
    private Listener listener;
    private Maintenance maintenance;
    private Maintenance scheduleClock;
    private WebhookSender webhooks;
    private JobRunrDashboardWebServer dashboard;
    private volatile boolean closing;
    private volatile Runnable drainRequestHandler;

    /**
     * Starts the node's parts in order: metrics endpoint, lease keeper (and a first clean-up of
     * leftovers), JobRunr's server and the books, the claim loop, the node's connection
     * (heartbeat, output flush, wake and cancel), the maintenance loops, the dashboard. If one fails, those already
     * started are stopped, in reverse order, before the error is thrown.
     */
    private WorkerNode(Core core, boolean ownsCore, WorkerConfig config, Sandbox sandbox) {
        this.ownsCore = ownsCore;
        this.config = config;
        this.core = core;
        this.leases = new LeaseStore(core.pool());
        this.sandbox = sandbox;
        this.metrics = new NodeMetrics(config.nodeId());
        LOG.info("worker config: {}", config);
        try {
            start();
        } catch (RuntimeException | Error e) {
            stop();
            throw e;
        }
    }

    private void start() {
        sandbox.verify();
        String node = config.nodeId();
        Limits limits = config.limits();
        if (config.metricsPort() > 0) {
            // First, while nothing else runs: a port in use stops the start with nothing to undo.
            try {
                metrics.serve(config.metricsPort());
            } catch (UncheckedIOException e) {
                throw new ConfigException("--metrics-port " + config.metricsPort() + ": " + e.getCause().getMessage());
            }
        }
        String incarnation = node + "/" + randomHex(8);
        String wakeChannel = Channels.WAKE + "_" + randomHex(16);
        this.keeper = new LeaseKeeper(incarnation, node, version(), wakeChannel, config.slots(), config.leaseTtl(),
                config.leaseDir(), metrics);
        // Pooled containers of a node process that stopped beating for 3 lease ttls are gone with it.
        LeftoverCleaner cleaner = new LeftoverCleaner(sandbox, keeper, leases, core.pool(),
                config.leaseTtl().multipliedBy(3), core.deployment());
        cleaner.clean();
        this.preparation = RunPreparation.open(new RunPreparation.Setup(node, limits, config.leaseDir(), config.egress(),
                config.secretsKey(), config.apiUrl(), config.issuerUrl()), sandbox, core.pool(), keeper, metrics);
        // After the run preparation: it tells a process sandbox where its API relay looks, which
        // the spares made here already need.
        sandbox.prepare(new Sandbox.NodeShape(incarnation, limits, config.slots(), config.leaseDir(), core.deployment()));

        // JobRunr's server: this node on the dashboard's servers page, and JobRunr's housekeeping.
        // Its storage hands it no work (JobRunrStorage), so its one worker thread stays idle, and
        // no recurring job: schedules' time is Outrun's (ScheduleClock).
        this.server = new BackgroundJobServer(JobRunrStorage.forServer(core.pool(), core.jsonMapper()), core.jsonMapper(), NO_JOBS,
                usingStandardBackgroundJobServerConfiguration()
                        .andName(node)
                        .andWorkerCount(1)
                        .andPollInterval(jobRunrPoll())
                        .andInterruptJobsAwaitDurationOnStopBackgroundJobServer(Duration.ofSeconds(2)));
        server.start();
        // A running job not saved for JobRunr's server timeout (4 polls, 60 s) is failed as an
        // orphan: the books save each running job again every 2 polls.
        this.books = new JobBooks(core.books(), () -> this.server, jobRunrPoll().multipliedBy(2));
        this.serverWatch = new ServerWatch(server, node);
        Integer defaultMaxRunning = core.limits().maxRunning();
        StdinFeeds stdinFeeds = new StdinFeeds(core.stdin());
        AttemptRunner runner = new AttemptRunner(new AttemptRunner.Node(node, config.leaseTtl(), sandbox, keeper), preparation,
                stdinFeeds, new EndWriter(new EndWriter.Stores(leases, core.submissions(), core.books(), books, core.wakes()), metrics, node,
                        defaultMaxRunning));
        LeaseKeeper leaseKeeper = this.keeper;
        this.loop = new ClaimLoop(node, config.slots(), config.pollInterval(),
                free -> leases.claim(incarnation, free, config.leaseTtl(), defaultMaxRunning),
                runner::run, runner::handBackUnstarted, leaseKeeper::isDraining, () -> core.wakes().relayWake(wakeChannel));
        // The node's one direct connection: its own wake channel (a submit wakes only the nodes it
        // needs), cancels, and the heartbeat and output flush, each statement bounded.
        Duration bound = LeaseKeeper.statementTimeout(config.leaseTtl());
        // Completion webhooks (issue 28): every node that can send them (a --webhook-allow list and
        // the key that opens the owners' signing secrets) sends whichever is due, woken by the end's
        // NOTIFY. A node that could only fail them takes none.
        boolean sendsWebhooks = !config.webhooks().isEmpty() && config.secretsKey() != null;
        if (!sendsWebhooks && !config.webhooks().isEmpty()) {
            LOG.warn("--webhook-allow is ignored without --secrets-key-file: this node cannot sign webhooks and sends none");
        }
        WebhookSender webhookSender = sendsWebhooks ? new WebhookSender(
                new WebhookStore(core.pool()), config.secretsKey(), config.webhooks(), node).start() : null;
        this.webhooks = webhookSender;
        this.listener = new Listener(core.config(), node)
                .on(wakeChannel, loop::wake)
                .on(Channels.WEBHOOK, payload -> {
                    if (webhookSender != null) {
                        webhookSender.wake();
                    }
                })
                .on(Channels.CANCEL, payload -> leaseKeeper.cancel(UUID.fromString(payload)))
                .on(Channels.STDIN, payload -> stdinFeeds.wake(UUID.fromString(payload)))
                .every(config.heartbeat(), bound, leaseKeeper::beat)
                .every(config.outputFlush(), bound, leaseKeeper::flush)
                // Back after a restart or a failover: what a wake or a webhook's NOTIFY lost
                // meanwhile would have asked, at once rather than at the next poll. (Cancels come
                // back with the next heartbeat's answer; stdin feeds look by themselves.)
                .onReconnect(() -> {
                    loop.wake("reconnect");
                    if (webhookSender != null) {
                        webhookSender.wake();
                    }
                })
                .start();
        Listener direct = this.listener;
        Duration ttl = config.leaseTtl();
        metrics.readiness(() -> {
            String down = direct.down();
            if (down != null) {
                return down;
            }
            long quietMs = leaseKeeper.sinceLastRenewal().toMillis();
            return quietMs > ttl.toMillis() ? "no heartbeat for " + quietMs / 1000 + " s (the database answers too slowly)" : null;
        });
        try {
            if (!keeper.awaitFirstBeat(Duration.ofSeconds(30))) {
                LOG.warn("worker {} has not completed a heartbeat in 30 s; it is woken for new work once it has", node);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        ScheduleClock clock = new ScheduleClock(core.pool(), core.service(), core.books());
        this.maintenance = new Maintenance("outrun-maintenance")
                // Only the node whose heartbeat holds the fleet's sweep sweeps: once per interval for the whole fleet.
                .add(Periodic.of("re-drive sweep", config.sweepInterval(), () -> {
                    if (keeper.isSweeper()) {
                        core.sweep().sweep();
                    }
                }))
                .add(Periodic.of("drain request and JobRunr server watch", Duration.ofSeconds(5), this::watch))
                // Firing jobs left ENQUEUED (an older version's, an admin's requeue): ended, never run.
                .add(Periodic.of("enqueued schedule firings", Duration.ofSeconds(5), () -> {
                    if (keeper.isSweeper()) {
                        clock.retireOlderFirings();
                    }
                }))
                // Children left live by a parent that ended by itself, or was reaped (issue 31):
                // cancelled by the sweeper, once per 5 s for the fleet (an API cancel does it at once).
                .add(Periodic.of("children of ended parents", Duration.ofSeconds(5), () -> {
                    if (keeper.isSweeper()) {
                        core.children().endOrphans();
                    }
                }))
                .add(Periodic.of("leftover clean-up", config.cleanupInterval(), cleaner::clean));
        maintenance.start();
        // Schedules fire on time (issue 45): the sweeper's clock, on a thread of its own so that a
        // slow sweep never makes a firing late. It looks at the database when the soonest
        // schedule is due, and at least once a second (a new schedule's first look).
        this.scheduleClock = new Maintenance("outrun-schedule-clock")
                .add(Periodic.of("schedule clock", ScheduleClock.TICK, () -> {
                    if (keeper.isSweeper()) {
                        clock.tick();
                    }
                }));
        scheduleClock.start();
        if (config.dashboardPort() > 0) {
            this.dashboard = config.dashboardAccess().serve(config.dashboardPort(), core.storage(), core.jsonMapper());
        }
        LeaseKeeper keeper = this.keeper;
        BackgroundJobServer server = this.server;
        metrics.gauge("outrun.node.slots", "Executions this node runs at once", config::slots);
        metrics.gauge("outrun.node.runs", "Runs on this node now", keeper::size);
        metrics.gauge("outrun.node.heartbeat.age.seconds", "Time since this node last renewed its leases (beats every ttl/3)",
                () -> keeper.sinceLastRenewal().toMillis() / 1000.0);
        metrics.gauge("outrun.node.sandbox.engine.up", "1 while this node's sandbox engine answers (Docker: its event"
                + " stream is open); 0 while it is away (restarting, stopped)", () -> sandbox.engineUp() ? 1 : 0);
        metrics.gauge("outrun.node.sandbox.engine.losses", "Times this node lost its sandbox engine since it started",
                sandbox::engineLosses);
        metrics.gauge("outrun.node.jobrunr.running", "1 while JobRunr's background job server of this node runs",
                () -> server.isRunning() ? 1 : 0);
        LOG.info("worker {} started as incarnation {}: {} slots, sandbox {}, lease ttl {} ms, lease files in {}; loops: {}",
                node, incarnation, config.slots(), sandbox.name(), config.leaseTtl().toMillis(), config.leaseDir(),
                maintenance.names());
    }

    /** Starts a node on an existing {@link Core} (shared with an API in {@code outrun dev}). */
    public static WorkerNode start(Core core, WorkerConfig config, Sandbox sandbox) {
        return new WorkerNode(core, false, config, sandbox);
    }

    /** As {@link #start(Core, WorkerConfig, Sandbox)}, with {@code limits} for its runs. */
    public static WorkerNode start(Core core, WorkerConfig config, Sandbox sandbox, Limits limits) {
        return start(core, config.withLimits(limits), sandbox);
    }

    /** Opens its own {@link Core} and starts; closing the node closes it. */
    public static WorkerNode open(DatabaseConfig db, WorkerConfig config, Sandbox sandbox) {
        return open(db, config, sandbox, OwnerLimits.DEFAULTS);
    }

    /** As {@link #open(DatabaseConfig, WorkerConfig, Sandbox)}, sharing the fleet between owners by {@code owners}. */
    public static WorkerNode open(DatabaseConfig db, WorkerConfig config, Sandbox sandbox, OwnerLimits owners) {
        Core core = Core.open(db, config.nodeId(), owners);
        try {
            return new WorkerNode(core, true, config, sandbox);
        } catch (RuntimeException e) {
            core.close();
            throw e;
        }
    }

    /** As {@link #open(DatabaseConfig, WorkerConfig, Sandbox)}, with {@code limits} for its runs. */
    public static WorkerNode open(DatabaseConfig db, WorkerConfig config, Sandbox sandbox, Limits limits) {
        return open(db, config.withLimits(limits), sandbox);
    }

    /** Passes on a drain asked for by {@code outrun drain}, then checks JobRunr's server is still up. */
    private void watch() {
        if (!closing) {
            serverWatch.check();
        }
        if (keeper.drainRequested() && drainRequestHandler != null && !keeper.isDraining()) {
            LOG.warn("worker {} was asked to drain (outrun drain)", config.nodeId());
            Runnable handler = drainRequestHandler;
            Thread t = new Thread(handler, "outrun-drain");
            t.setDaemon(true);
            t.start();
        }
    }

    /** JobRunr's server: its registry and housekeeping; it is given no job to run. */
    private static final JobActivator NO_JOBS = new JobActivator() {
        @Override
        public <T> T activateJob(Class<T> type) {
            return null;
        }
    };

    /**
     * JobRunr's poll: how often its server beats in its registry and runs its housekeeping, and
     * (× 4) how long a PROCESSING job may go unsaved before its orphan check fails it, so the
     * books save a running job again every 2 polls. Work never waits for it.
     */
    private static Duration jobRunrPoll() {
        return JOBRUNR_POLL;
    }

    /**
     * The same on every node, whatever its {@code --poll-interval-s}: JobRunr's orphan check runs
     * on its master with the master's poll, so a node refreshing at its own slower pace would see
     * its running jobs failed as orphans. JobRunr's floor on SQL storage.
     */
    static final Duration JOBRUNR_POLL = Duration.ofSeconds(5);

    private static String randomHex(int chars) {
        byte[] bytes = new byte[(chars + 1) / 2];
        new SecureRandom().nextBytes(bytes);
        return HexFormat.of().formatHex(bytes).substring(0, chars);
    }

    private static String version() {
        String v = WorkerNode.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }

    /** This process's incarnation: the owner of its leases. */
    public String incarnation() {
        return keeper.incarnation();
    }

    public Core core() {
        return core;
    }

    public WorkerConfig config() {
        return config;
    }

    /** The claim loop: how work reaches this node's slots. */
    public ClaimLoop claimLoop() {
        return loop;
    }

    public BackgroundJobServer server() {
        return server;
    }

    public int running() {
        return keeper.size();
    }

    public NodeMetrics metrics() {
        return metrics;
    }

    /** What to do when {@code outrun drain} asks this node to drain (the CLI drains, then exits 0). */
    public void onDrainRequest(Runnable handler) {
        this.drainRequestHandler = handler;
    }

    /**
     * Graceful drain, as for a rolling deploy: claims nothing more (its beats tell the fleet not
     * to wake it), lets
     * running executions finish for up to {@code within}, then kills the rest and hands them back
     * without spending an attempt. Returns once no run is left (or 30 s after the hand-back).
     */
    public void drain(Duration within) {
        keeper.setDraining(true);
        LOG.info("worker {} draining: {} runs may finish within {} ms", config.nodeId(), keeper.size(), within.toMillis());
        long until = System.nanoTime() + within.toNanos();
        try {
            // The loop's count, not the keeper's: a claim just made is not tracked until its run begins.
            while (loop.busy() > 0 && System.nanoTime() < until) {
                Thread.sleep(100);
            }
            if (loop.busy() > 0) {
                int handed = keeper.handBackAll();
                LOG.warn("worker {}: drain time is up; handing back {} runs", config.nodeId(), handed);
                long give = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                while (loop.busy() > 0 && System.nanoTime() < give) {
                    Thread.sleep(100);
                    keeper.handBackAll(); // a run whose claim was under way begins only now
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        LOG.info("worker {} drained ({} runs left)", config.nodeId(), keeper.size());
    }

    /**
     * Stops taking work, interrupts running jobs, kills and removes their runs, and only then lets
     * this node's leases expire, so the sweep re-drives them on other nodes at once and no new
     * attempt ever starts beside a run of this node.
     */
    @Override
    public synchronized void close() {
        if (closing) {
            return;
        }
        stop();
        if (ownsCore) {
            core.close();
        }
    }

    /** Stops every part that started, whether the node is closing or its start failed half-way. */
    private synchronized void stop() {
        closing = true;
        if (scheduleClock != null) {
            scheduleClock.close();
        }
        if (maintenance != null) {
            maintenance.close();
        }
        if (webhooks != null) {
            webhooks.close(); // an attempt cut short is taken again by another node once its hold runs out
        }
        if (dashboard != null) {
            dashboard.stop();
        }
        if (loop != null) {
            // Claims nothing more; its runs are interrupted, killed and removed (their leases decide).
            loop.close(Duration.ofSeconds(5));
            LOG.info("worker {} looked for work {} times", config.nodeId(), loop.looks());
        }
        if (books != null) {
            books.close();
        }
        if (server != null) {
            try {
                server.stop();
            } catch (RuntimeException e) {
                LOG.warn("JobRunr server did not stop cleanly", e);
            }
        }
        sandbox.close();
        if (preparation != null) {
            preparation.close();
        }
        if (listener != null) {
            listener.close();
        }
        if (keeper != null) {
            keeper.close();
            releaseLeases();
        }
        metrics.close();
    }

    private void releaseLeases() {
        try {
            if (keeper.size() == 0) {
                int released = leases.expireLeases(keeper.incarnation());
                if (released > 0) {
                    LOG.info("released {} leases at shutdown (their runs are dead); the sweep re-drives them", released);
                }
            } else {
                // A run not confirmed dead must keep its lease until it lapses (its kill switch fires first).
                LOG.warn("{} runs not confirmed dead at stop; their leases expire on their own", keeper.size());
            }
            try (Connection c = core.pool().getConnection()) {
                Heartbeat.resign(c, keeper.incarnation());
            }
        } catch (RuntimeException | SQLException e) {
            LOG.warn("could not give its leases up at shutdown; they expire on their own", e);
        }
    }
}
