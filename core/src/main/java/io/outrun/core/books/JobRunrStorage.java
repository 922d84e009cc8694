package io.outrun.core.books;

import io.outrun.core.store.AdvisoryLock;
import io.outrun.core.store.Database;
import io.outrun.core.store.StoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import javax.sql.DataSource;
import org.jobrunr.jobs.Job;
import org.jobrunr.jobs.mappers.JobMapper;
import org.jobrunr.server.BackgroundJobServer;
import org.jobrunr.storage.StorageProvider;
import org.jobrunr.storage.navigation.AmountRequest;
import org.jobrunr.storage.sql.postgres.PostgresStorageProvider;
import org.jobrunr.utils.mapper.JsonMapper;
import org.jobrunr.utils.mapper.jackson.JacksonJsonMapper;

/**
 * JobRunr's storage on Outrun's database, where JobRunr keeps the books of every execution: its
 * job, states and history, shown by the dashboard. JobRunr creates and migrates its own tables
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
            StorageProvider storage = new BooksOnly(dataSource);
            storage.setJobMapper(new JobMapper(jsonMapper));
            indexFirings(lockOn);
            return storage;
        });
    }

    /**
     * Schedules' firings (issue 28): the jobs JobRunr's recurring jobs enqueue, which Outrun turns
     * into executions, found by a small partial index of JobRunr's table (made here: JobRunr's
     * tables exist only once its storage is built, after Outrun's migrations).
     */
    private static void indexFirings(DataSource direct) {
        try (Connection c = direct.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE INDEX IF NOT EXISTS outrun_jobrunr_firings ON jobrunr_jobs (createdat)"
                    + " WHERE state = 'ENQUEUED' AND recurringjobid LIKE 'outrun-schedule-%'");
        } catch (SQLException e) {
            throw new StoreException("cannot index the schedules' firings in jobrunr_jobs", e);
        }
    }

    /**
     * The storage as JobRunr's servers see it: everything but work. A server's look for enqueued
     * jobs ({@code getJobsToProcess}, the one call its steward makes to take work) finds none, so
     * JobRunr's servers on Outrun's nodes keep their registry, heartbeats and housekeeping and
     * never run an execution's job: the node that claims an execution records it on its job.
     */
    private static final class BooksOnly extends PostgresStorageProvider {
        BooksOnly(DataSource dataSource) {
            super(dataSource);
        }

        @Override
        public List<Job> getJobsToProcess(BackgroundJobServer backgroundJobServer, AmountRequest amountRequest) {
            return List.of();
        }
    }
}
