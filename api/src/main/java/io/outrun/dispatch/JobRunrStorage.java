package io.outrun.dispatch;

import javax.sql.DataSource;
import org.jobrunr.jobs.mappers.JobMapper;
import org.jobrunr.storage.StorageProvider;
import org.jobrunr.storage.sql.postgres.PostgresStorageProvider;
import org.jobrunr.utils.mapper.JsonMapper;
import org.jobrunr.utils.mapper.jackson.JacksonJsonMapper;

/**
 * JobRunr's storage on Outrun's database. JobRunr creates and migrates its own tables
 * ({@code jobrunr_*}) under its own lock row, so nodes starting together wait for each other.
 */
public final class JobRunrStorage {
    private JobRunrStorage() {
    }

    public static JsonMapper jsonMapper() {
        return new JacksonJsonMapper();
    }

    public static StorageProvider open(DataSource dataSource, JsonMapper jsonMapper) {
        StorageProvider storage = new PostgresStorageProvider(dataSource);
        storage.setJobMapper(new JobMapper(jsonMapper));
        return storage;
    }
}
