package io.outrun.worker.node;

import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static io.outrun.testing.Rows.single;

/** Five nodes started at once on an empty database migrate it once, cleanly. */
class ConcurrentStartIT {

    @Test
    void fiveNodesOnAnEmptyDatabaseLeaveOneCleanSchema() throws Exception {
        DatabaseConfig db = TestDatabase.fresh(DatabaseConfig::new);
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
                // Each node says "ready" once JobRunr has announced its server (or after 30 s
                // without: a server JobRunr stopped at start is restarted by the node's watchdog).
                try {
                    Await.until("5 servers announced", Duration.ofSeconds(60),
                            () -> single(st, "SELECT count(*) FROM jobrunr_backgroundjobservers") == 5);
                } catch (AssertionError timedOut) {
                    // Say why, not only that: the servers the database knows and each node's log.
                    throw new AssertionError(timedOut.getMessage() + "; servers: " + describe(st) + "\n" + logs(nodes), timedOut);
                }
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

    private static String describe(Statement st) throws Exception {
        StringBuilder b = new StringBuilder();
        try (ResultSet rs = st.executeQuery("SELECT name, firstheartbeat, lastheartbeat, running FROM jobrunr_backgroundjobservers")) {
            while (rs.next()) {
                b.append(rs.getString(1)).append(" first=").append(rs.getString(2)).append(" last=").append(rs.getString(3))
                        .append(" running=").append(rs.getBoolean(4)).append("; ");
            }
        }
        return b.toString();
    }

    private static String logs(List<WorkerProcess> nodes) throws Exception {
        StringBuilder b = new StringBuilder();
        for (WorkerProcess w : nodes) {
            b.append("--- ").append(w.nodeId()).append('\n').append(w.log());
        }
        return b.toString();
    }
}
