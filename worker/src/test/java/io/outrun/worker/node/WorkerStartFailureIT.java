package io.outrun.worker.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A node whose last part fails to start (its dashboard's port is taken) stops every part it had
 * already started: nothing keeps running, polling or listening behind the error.
 */
class WorkerStartFailureIT {

    @Test
    void aPartThatFailsToStartStopsThoseStartedBeforeIt() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        int metricsPort = freePort();
        try (ServerSocket taken = new ServerSocket(0); Core api = Core.open(db, "api")) {
            List<String> before = outrunThreads();
            WorkerConfig config = WorkerConfig.defaults("half-started").withMetricsPort(metricsPort)
                    .withDashboard(taken.getLocalPort(), DashboardAccess.OPEN);

            // The dashboard is the last part to start: everything else was running when it failed.
            assertThatThrownBy(() -> WorkerNode.open(db, config, new ProcessSandbox()))
                    .isInstanceOf(RuntimeException.class).hasStackTraceContaining("JobRunrDashboardWebServer");

            Await.until("the node's threads gone", Duration.ofSeconds(20), () -> outrunThreads().equals(before));
            try (ServerSocket metricsAgain = new ServerSocket(metricsPort)) {
                assertThat(metricsAgain.isBound()).as("the metrics endpoint was closed").isTrue();
            }
        }
    }

    /** Threads a worker node starts: maintenance, JobRunr's server, its wake-up and listener. */
    private static List<String> outrunThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .map(Thread::getName)
                .filter(n -> n.startsWith("outrun-maintenance") || n.startsWith("outrun-wake") || n.startsWith("outrun-lease") || n.startsWith("backgroundjob")
                        || n.contains("half-started"))
                .sorted()
                .toList();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
