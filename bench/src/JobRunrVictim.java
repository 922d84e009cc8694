import io.outrun.core.books.JobRunrStorage;
import io.outrun.core.store.Database;
import io.outrun.core.store.DatabaseConfig;
import java.time.Instant;
import org.jobrunr.server.BackgroundJobServer;
import org.jobrunr.server.JobActivator;
import org.jobrunr.storage.StorageProvider;
import org.jobrunr.utils.mapper.JsonMapper;

import static org.jobrunr.server.BackgroundJobServerConfiguration.usingStandardBackgroundJobServerConfiguration;

/**
 * The JobRunr server that the recovery baseline SIGKILLs: JobRunr's defaults (15 s poll), its
 * job prints STARTED and sleeps. Usage: JobRunrVictim JDBC_URL USER PASSWORD
 */
public final class JobRunrVictim {
    public static void main(String[] args) throws Exception {
        DatabaseConfig db = new DatabaseConfig(args[0], args[1], args.length > 2 ? args[2] : "");
        RecoveryBench.Sleeper sleeper = what -> {
            System.out.println("STARTED " + what + " at " + Instant.now());
            System.out.flush();
            Thread.sleep(600_000);
        };
        var pool = Database.pool(db, "bench-jr-victim");
        JsonMapper mapper = JobRunrStorage.jsonMapper();
        StorageProvider storage = Support.plainJobRunrStorage(pool, mapper); // plain JobRunr: its servers take work
        BackgroundJobServer server = new BackgroundJobServer(storage, mapper, new JobActivator() {
            @Override
            public <T> T activateJob(Class<T> type) {
                return type.isAssignableFrom(RecoveryBench.Sleeper.class) ? type.cast(sleeper) : null;
            }
        }, usingStandardBackgroundJobServerConfiguration().andName("bench-jr-victim"));
        server.start();
        System.out.println("ready");
        System.out.flush();
        Thread.currentThread().join();
    }
}
