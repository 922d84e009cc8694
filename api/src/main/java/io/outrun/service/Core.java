package io.outrun.service;

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

    private Core(DatabaseConfig config, String name, Duration lostDispatchGrace) {
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
            this.sweep = new RedriveSweep(store, dispatcher, lostDispatchGrace);
            this.service = new ExecutionService(store, dispatcher, sweep);
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
    }

    /** Opens the pool, applies migrations (Outrun's, then JobRunr's) and wires the rest. */
    public static Core open(DatabaseConfig config, String name, Duration lostDispatchGrace) {
        return new Core(config, name, lostDispatchGrace);
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
