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
import org.jobrunr.storage.RecurringJobsResult;
import org.jobrunr.storage.StorageProvider;
import org.jobrunr.storage.StorageProviderUtils.DatabaseOptions;
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
     * The storage JobRunr's background job server is given (issue 45): as {@link #open}'s, on the
     * same tables, except that the server finds no recurring job to fire. Outrun keeps its
     * schedules' time itself ({@code worker.schedule.ScheduleClock}); JobRunr's recurring jobs stay
     * for the dashboard, which reads the storage {@link #open} made. JobRunr's firing of them (at
     * its 5 s poll, and documented up to about 100 recurring jobs in OSS) would fire each twice.
     * Made after {@link #open}, which created JobRunr's tables.
     */
    public static StorageProvider forServer(DataSource dataSource, JsonMapper jsonMapper) {
        StorageProvider storage = new ServerView(dataSource);
        storage.setJobMapper(new JobMapper(jsonMapper));
        return storage;
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
    private static class BooksOnly extends PostgresStorageProvider {
        BooksOnly(DataSource dataSource) {
            super(dataSource);
        }

        BooksOnly(DataSource dataSource, DatabaseOptions options) {
            super(dataSource, options);
        }

        @Override
        public List<Job> getJobsToProcess(BackgroundJobServer backgroundJobServer, AmountRequest amountRequest) {
            return List.of();
        }
    }

    /**
     * The server's view: books only, and no recurring job. Its recurring-job task asks whether
     * they changed before it reads them; the answer is always no, so its list stays empty.
     */
    private static final class ServerView extends BooksOnly {
        ServerView(DataSource dataSource) {
            super(dataSource, DatabaseOptions.SKIP_CREATE);
        }

        @Override
        public boolean recurringJobsUpdated(Long recurringJobsUpdatedHash) {
            return false;
        }

        @Override
        public RecurringJobsResult getRecurringJobs() {
            return new RecurringJobsResult();
        }
    }
}
