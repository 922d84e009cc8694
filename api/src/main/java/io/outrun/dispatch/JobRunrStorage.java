package io.outrun.dispatch;

import io.outrun.store.StoreException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
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

    /** Advisory lock key for JobRunr's migrations: "outrun jobrunr". */
    static final long MIGRATION_LOCK = 0x6f75_7472_756e_4a52L;

    public static StorageProvider open(DataSource dataSource, JsonMapper jsonMapper) {
        try (Connection c = dataSource.getConnection()) {
            advisory(c, "SELECT pg_advisory_lock(?)");
            try {
                StorageProvider storage = new PostgresStorageProvider(dataSource);
                storage.setJobMapper(new JobMapper(jsonMapper));
                return storage;
            } finally {
                advisory(c, "SELECT pg_advisory_unlock(?)");
            }
        } catch (SQLException e) {
            throw new StoreException("cannot open JobRunr's storage", e);
        }
    }

    private static void advisory(Connection c, String sql) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, MIGRATION_LOCK);
            ps.execute();
        }
    }
}
