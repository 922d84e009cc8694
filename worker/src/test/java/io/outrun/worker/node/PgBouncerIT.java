package io.outrun.worker.node;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.PgBouncer;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The crash and re-drive scenario with the whole fleet behind a real PgBouncer in transaction
 * pooling mode: pooled statements rely on no session state (no server-side prepared statements,
 * no session locks), and only the node's LISTEN/heartbeat connection and migrations go direct.
 */
class PgBouncerIT {

    @Test
    void aKilledWorkersExecutionsAreRedrivenThroughPgBouncer() throws Exception {
        DatabaseConfig direct = TestDatabase.migrated(DatabaseConfig::new);
        try (PgBouncer bouncer = PgBouncer.inFrontOf(direct.url(), direct.user())) {
            // Pooled statements through PgBouncer, sessions (LISTEN, heartbeat, migrations) direct.
            DatabaseConfig db = new DatabaseConfig(bouncer.url(), direct.url(), direct.user(), direct.password(),
                    DatabaseConfig.DEFAULT_POOL_SIZE);
            try (Core api = Core.open(db, "api");
                 WorkerProcess a = WorkerProcess.start(db, "bouncer-a", 3);
                 WorkerProcess b = WorkerProcess.start(db, "bouncer-b", 3)) {
                List<UUID> ids = new ArrayList<>();
                for (int i = 0; i < 6; i++) {
                    ids.add(api.service().submit(Submission.of("alice", "echo start-" + i + "; sleep 4; echo done-" + i))
                            .execution().id());
                }
                Await.until("all running", Duration.ofSeconds(30), () -> ids.stream()
                        .allMatch(id -> api.submissions().find(id).orElseThrow().status() == ExecutionStatus.RUNNING));
                Map<UUID, Boolean> onA = new HashMap<>();
                ids.forEach(id -> onA.put(id, api.submissions().find(id).orElseThrow().leaseHolder().startsWith("bouncer-a/")));
                assertThat(onA.values()).contains(true);
                a.kill();
                Map<UUID, Execution> done = new HashMap<>();
                Await.until("all ended", Duration.ofSeconds(90), () -> {
                    ids.forEach(id -> api.submissions().find(id).filter(e -> e.status().isTerminal()).ifPresent(e -> done.put(id, e)));
                    return done.size() == ids.size();
                });
                for (int i = 0; i < ids.size(); i++) {
                    Execution e = done.get(ids.get(i));
                    assertThat(e.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
                    assertThat(e.stdout().text()).isEqualTo("start-" + i + "\ndone-" + i + "\n");
                    assertThat(e.attempt()).isEqualTo(onA.get(ids.get(i)) ? 2 : 1);
                }
                assertThat(b.log()).doesNotContain("prepared statement", "ERROR");
            }
        }
    }
}
