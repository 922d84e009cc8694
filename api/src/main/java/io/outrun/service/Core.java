package io.outrun.service;

import io.outrun.owner.HeldWork;
import io.outrun.owner.OwnerLimits;
import io.outrun.owner.OwnerStore;
import io.outrun.owner.QueueGate;
import com.zaxxer.hikari.HikariDataSource;
import io.outrun.dispatch.Dispatcher;
import io.outrun.dispatch.JobRunrStorage;
import io.outrun.redrive.RedriveSweep;
import io.outrun.store.Database;
import io.outrun.store.DatabaseConfig;
import io.outrun.store.ExecutionStore;
import java.time.Duration;
import org.jobrunr.storage.StorageProvider;
import org.jobrunr.utils.mapper.JsonMapper;

/**
 * What every node role shares: its connection pool (migrated at open), the execution store,
 * JobRunr's storage and the dispatcher, the re-drive sweep and the owner-facing service.
 */
public final class Core implements AutoCloseable {

    private final DatabaseConfig config;
    private final HikariDataSource pool;
    private final ExecutionStore store;
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
            this.store = new ExecutionStore(pool);
            this.jsonMapper = JobRunrStorage.jsonMapper();
            this.storage = JobRunrStorage.open(pool, jsonMapper, direct);
            this.dispatcher = new Dispatcher(storage, store);
            this.owners = new OwnerStore(pool);
            this.held = new HeldWork(store, dispatcher, limits);
            this.sweep = new RedriveSweep(store, dispatcher, lostDispatchGrace, held);
            this.service = new ExecutionService(store, dispatcher, sweep, held, new QueueGate(owners, limits.maxQueued()));
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

    public ExecutionStore store() {
        return store;
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
            dispatcher.close();
            storage.close();
        } finally {
            pool.close();
        }
    }
}
