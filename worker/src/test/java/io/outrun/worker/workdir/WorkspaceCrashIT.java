package io.outrun.worker.workdir;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.RunInputs;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** A worker SIGKILLed mid-run: the re-run starts from the workspace as last saved, not as the dead run left it. */
class WorkspaceCrashIT {

    @Test
    void theReRunAfterADeadWorkerStartsFromTheLastSavedWorkspace() throws Exception {
        Requirements.docker();
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core api = Core.open(db, "api")) {
            UUID first;
            UUID second;
            try (WorkerProcess a = WorkerProcess.startWith(db, "ws-a", 2, "docker")) {
                first = submit(api, "echo saved > state");
                assertThat(awaitEnd(api, first).status()).isEqualTo(ExecutionStatus.SUCCEEDED);
                second = submit(api, "cat state; echo dead-run >> state; touch mid; echo started; sleep 25");
                Await.until("attempt 1 started", Duration.ofSeconds(60),
                        () -> api.submissions().find(second).filter(e -> e.stdout().text().contains("started")).orElse(null));
                a.kill();
            }
            try (WorkerProcess b = WorkerProcess.startWith(db, "ws-b", 2, "docker", "--cleanup-interval-s", "2")) {
                Execution done = awaitEnd(api, second);
                assertThat(done.status()).as(done.stderr().text() + " / " + done.stdout().text()).isEqualTo(ExecutionStatus.SUCCEEDED);
                assertThat(done.attempt()).isEqualTo(2);
                assertThat(done.stdout().text()).as("the dead run's changes were never saved").isEqualTo("saved\nstarted\n");
                UUID check = submit(api, "cat state; ls mid");
                assertThat(awaitEnd(api, check).stdout().text()).isEqualTo("saved\ndead-run\nmid\n");
            }
        }
    }

    private static UUID submit(Core api, String command) {
        return api.service().submit(Submission.of("alice", command).withInputs(new RunInputs(null, List.of(), "crash")))
                .execution().id();
    }

    private static Execution awaitEnd(Core api, UUID id) throws InterruptedException {
        return Await.until("end of " + id, Duration.ofSeconds(150),
                () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
    }
}
