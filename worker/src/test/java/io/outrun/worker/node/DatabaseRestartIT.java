package io.outrun.worker.node;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * PostgreSQL goes away for longer than JobRunr OSS tolerates (it stops its server after six
 * storage errors in a row) and longer than a lease: the running execution is still finished
 * exactly once (re-driven if need be), and the node takes new work afterwards.
 */
class DatabaseRestartIT {

    @Test
    void databaseOutageDelaysButNeverDropsAnExecution(@TempDir Path data) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        EmbeddedPostgres pg = start(data, port);
        DatabaseConfig db = new DatabaseConfig(pg.getJdbcUrl("postgres", "postgres"), "postgres", "");
        WorkerConfig config = WorkerConfig.defaults("survivor");
        try (Core api = Core.open(db, "api");
             WorkerNode node = WorkerNode.open(db, config, new ProcessSandbox(), Limits.DEFAULTS)) {
            UUID id = api.service().submit(Submission.of("alice", "echo begin; sleep 4; echo end")).execution().id();
            Await.until("running", Duration.ofSeconds(20), () -> api.submissions().find(id).orElseThrow().status() == ExecutionStatus.RUNNING);

            long outageStart = System.nanoTime();
            pg.close();   // the database is gone: heartbeats, JobRunr's polls and the finish all fail
            // Long enough for both things an outage does to a node: it steps down from its run
            // (no renewal for a ttl) and JobRunr stops its own server (after repeated errors).
            Await.until("the node to step down and JobRunr to stop its server", Duration.ofSeconds(120),
                    () -> node.running() == 0 && !node.server().isRunning());
            long outageS = (System.nanoTime() - outageStart) / 1_000_000_000L;
            pg = start(data, port);

            Execution done = Await.until("the execution to end", Duration.ofSeconds(90), () -> {
                try {
                    return api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null);
                } catch (RuntimeException e) {
                    return null; // pool still reconnecting
                }
            });
            assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
            assertThat(done.stdout().text()).isEqualTo("begin\nend\n");
            System.out.printf("DB OUTAGE: %d s; execution ended %s on attempt %d%n", outageS, done.status().wire(), done.attempt());

            UUID after = api.service().submit(Submission.of("alice", "echo after")).execution().id();
            Execution next = Await.until("new work after the outage", Duration.ofSeconds(30),
                    () -> api.submissions().find(after).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(next.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
            // New work never waits for JobRunr's server (the claim loop takes it); the server,
            // which keeps the dashboard's registry, is started again by the node's watch.
            Await.until("JobRunr's server runs again", Duration.ofSeconds(30), () -> node.server().isRunning());
        } finally {
            pg.close();
        }
    }

    private static EmbeddedPostgres start(Path data, int port) throws Exception {
        return EmbeddedPostgres.builder().setDataDirectory(data).setCleanDataDirectory(false).setPort(port)
                .setServerConfig("fsync", "off").start();
    }
}
