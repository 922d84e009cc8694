package io.outrun.dispatch;

import io.outrun.store.AdvisoryLock;
import io.outrun.store.Database;
import io.outrun.store.StoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.jobrunr.jobs.mappers.JobMapper;
import org.jobrunr.storage.StorageProvider;
import org.jobrunr.storage.sql.postgres.PostgresStorageProvider;
import org.jobrunr.utils.mapper.JsonMapper;
import org.jobrunr.utils.mapper.jackson.JacksonJsonMapper;

/**
 * JobRunr's storage on Outrun's database. JobRunr creates and migrates its own tables
 * ({@code jobrunr_*}) when its storage provider is built, but that is not safe when several
 * nodes start at once on an empty database ("relation jobrunr_jobs already exists" kills all but
 * one: seen in ConcurrentStartIT). So nodes build it one at a time, under a PostgreSQL advisory
 * lock; the first migrates, the others find nothing left to do.
 */
public final class JobRunrStorage {
    private JobRunrStorage() {
    }

    public static JsonMapper jsonMapper() {
        return new JacksonJsonMapper();
    }

    public static StorageProvider open(DataSource dataSource, JsonMapper jsonMapper) {
        return open(dataSource, jsonMapper, dataSource);
    }

    /** @param lockOn where the schema lock is held: PostgreSQL itself, never a transaction pooler */
    public static StorageProvider open(DataSource dataSource, JsonMapper jsonMapper, DataSource lockOn) {
        return new AdvisoryLock(lockOn, Database.SCHEMA_LOCK).runExclusive(() -> {
            StorageProvider storage = new PostgresStorageProvider(dataSource);
            storage.setJobMapper(new JobMapper(jsonMapper));
            installWakeTriggers(lockOn);
            return storage;
        });
    }

    /**
     * The wake-up of instant pickup, sent by the very transaction that makes a job ENQUEUED (see
     * migration V8): one trigger for a job inserted enqueued, one for a job that becomes enqueued
     * (a delayed retry coming due, an admin's requeue). Made here, not in a migration, because
     * JobRunr makes its table only now; once, by the first node (under the schema lock).
     */
    private static void installWakeTriggers(DataSource dataSource) {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute(WAKE_TRIGGERS);
        } catch (SQLException e) {
            throw new StoreException("cannot install the wake-up triggers on jobrunr_jobs", e);
        }
    }

    private static final String WAKE_TRIGGERS = """
            DO $$ BEGIN
              IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'jobrunr_jobs'::regclass
                  AND tgname = 'outrun_wake_on_insert') THEN
                CREATE TRIGGER outrun_wake_on_insert AFTER INSERT ON jobrunr_jobs
                  FOR EACH ROW WHEN (NEW.state = 'ENQUEUED') EXECUTE FUNCTION outrun_wake_on_enqueue();
              END IF;
              IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'jobrunr_jobs'::regclass
                  AND tgname = 'outrun_wake_on_update') THEN
                CREATE TRIGGER outrun_wake_on_update AFTER UPDATE OF state ON jobrunr_jobs
                  FOR EACH ROW WHEN (NEW.state = 'ENQUEUED' AND OLD.state IS DISTINCT FROM 'ENQUEUED')
                  EXECUTE FUNCTION outrun_wake_on_enqueue();
              END IF;
            END $$""";
}
