package io.outrun.service;

import io.outrun.owner.HeldWork;
import io.outrun.owner.OwnerLimits;
import io.outrun.owner.OwnerStore;
import io.outrun.owner.QueueGate;
import com.zaxxer.hikari.HikariDataSource;
import io.outrun.dispatch.Dispatcher;
import io.outrun.dispatch.JobRunrStorage;
import io.outrun.notify.Notifier;
import io.outrun.redrive.RedriveSweep;
import io.outrun.store.Database;
import io.outrun.store.DatabaseConfig;
import io.outrun.store.LeaseStore;
import io.outrun.store.RedriveStore;
import io.outrun.store.SubmissionStore;
import java.time.Duration;
import org.jobrunr.storage.StorageProvider;
import org.jobrunr.utils.mapper.JsonMapper;

/**
 * What every node role shares: its connection pool (migrated at open), the stores of executions,
 * JobRunr's storage and the dispatcher, the re-drive sweep and the owner-facing service.
 */
public final class Core implements AutoCloseable {

    private final DatabaseConfig config;
    private final HikariDataSource pool;
    private final SubmissionStore submissions;
    private final LeaseStore leases;
    private final RedriveStore redrives;
    private final JsonMapper jsonMapper;
    private final StorageProvider storage;
    private final Dispatcher dispatcher;
    private final RedriveSweep sweep;
    private final ExecutionService service;
    private final OwnerStore owners;
    private final HeldWork held;

    private Core(DatabaseConfig config, String name, Duration lostDispatchGrace, OwnerLimits limits) {
        this.config = config;
        // The effective settings, once per process (the password never appears: DatabaseConfig masks it).
        org.slf4j.LoggerFactory.getLogger(Core.class).info("database: {}, lost-dispatch grace {} s", config,
                lostDispatchGrace.toSeconds());
        this.pool = Database.pool(config, name);
        try {
            // Session locks and DDL go to PostgreSQL itself, never through a transaction pooler.
            javax.sql.DataSource direct = Database.direct(config);
            Database.migrate(direct);
            this.submissions = new SubmissionStore(pool);
            this.leases = new LeaseStore(pool);
            this.redrives = new RedriveStore(pool);
            this.jsonMapper = JobRunrStorage.jsonMapper();
            this.storage = JobRunrStorage.open(pool, jsonMapper, direct);
            this.dispatcher = new Dispatcher(storage, new Notifier(pool));
            this.owners = new OwnerStore(pool);
            this.held = new HeldWork(redrives, dispatcher, limits);
            this.sweep = new RedriveSweep(redrives, submissions, dispatcher, lostDispatchGrace, held);
            this.service = new ExecutionService(submissions, dispatcher, sweep, held, new QueueGate(owners, limits.maxQueued()));
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
    }

    /** Opens the pool, applies migrations (Outrun's, then JobRunr's) and wires the rest. */
    public static Core open(DatabaseConfig config, String name, Duration lostDispatchGrace) {
        return new Core(config, name, lostDispatchGrace, OwnerLimits.DEFAULTS);
    }

    /** As {@link #open(DatabaseConfig, String, Duration)}, sharing the fleet between owners by {@code limits}. */
    public static Core open(DatabaseConfig config, String name, Duration lostDispatchGrace, OwnerLimits limits) {
        return new Core(config, name, lostDispatchGrace, limits);
    }

    public DatabaseConfig config() {
        return config;
    }

    public HikariDataSource pool() {
        return pool;
    }

    /** Submissions, reads and cancels: an owner's side of its executions. */
    public SubmissionStore submissions() {
        return submissions;
    }

    /** Claims and the writes fenced by their leases: a worker's side. */
    public LeaseStore leases() {
        return leases;
    }

    /** Re-drive, lost dispatches and held work: the sweep's side. */
    public RedriveStore redrives() {
        return redrives;
    }

    public JsonMapper jsonMapper() {
        return jsonMapper;
    }

    public StorageProvider storage() {
        return storage;
    }

    public Dispatcher dispatcher() {
        return dispatcher;
    }

    public RedriveSweep sweep() {
        return sweep;
    }

    public ExecutionService service() {
        return service;
    }

    public OwnerStore owners() {
        return owners;
    }

    /** Releases held executions as their owners get room; also what the claim's owner limits are. */
    public HeldWork held() {
        return held;
    }

    @Override
    public void close() {
        try {
            held.close();
            dispatcher.close();
            storage.close();
        } finally {
            pool.close();
        }
    }
}
