package io.outrun.worker;

import io.outrun.store.DatabaseConfig;
import io.outrun.testing.TestDatabase;
import io.outrun.testing.WorkerProcess;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Five nodes started at once on an empty database migrate it once, cleanly. */
class ConcurrentStartIT {

    @Test
    void fiveNodesOnAnEmptyDatabaseLeaveOneCleanSchema() throws Exception {
        DatabaseConfig db = TestDatabase.fresh();
        ExecutorService pool = Executors.newFixedThreadPool(5);
        List<Future<WorkerProcess>> starting = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String node = "race-" + i;
            starting.add(pool.submit(() -> WorkerProcess.start(db, node, 1)));
        }
        List<WorkerProcess> nodes = new ArrayList<>();
        try {
            for (Future<WorkerProcess> f : starting) {
                nodes.add(f.get());
            }
            try (Connection c = DriverManager.getConnection(db.url(), db.user(), db.password());
                 Statement st = c.createStatement()) {
                assertThat(single(st, "SELECT count(*) FROM outrun_schema_history WHERE version = '1' AND success")).isEqualTo(1);
                assertThat(single(st, "SELECT count(*) FROM outrun_schema_history WHERE NOT success")).isZero();
                assertThat(single(st, "SELECT count(*) - count(DISTINCT script) FROM jobrunr_migrations")).isZero();
                assertThat(single(st, "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('executions', 'api_tokens', 'jobrunr_jobs')")).isEqualTo(3);
                // Servers announce themselves asynchronously after start.
                io.outrun.testing.Await.until("5 servers announced", java.time.Duration.ofSeconds(20), () -> {
                    try {
                        return single(st, "SELECT count(*) FROM jobrunr_backgroundjobservers") == 5;
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });
            }
            for (WorkerProcess w : nodes) {
                assertThat(w.log()).doesNotContain("ERROR").doesNotContain("Exception");
            }
        } finally {
            for (WorkerProcess w : nodes) {
                w.close();
            }
            pool.shutdownNow();
        }
    }

    private static long single(Statement st, String sql) throws Exception {
        try (ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
