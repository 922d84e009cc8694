package io.outrun.worker;

import io.outrun.execution.Execution;
import io.outrun.execution.ExecutionStatus;
import io.outrun.execution.Submission;
import io.outrun.owner.OwnerLimits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.service.Core;
import io.outrun.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An execution held behind its owner's running cap is released when one of that owner's runs
 * ends, even when it was held after that run's claim (so the claim saw no held work): not only
 * at the fleet's next sweep. The sweep here is 10 minutes away, so only the run's end can release it.
 */
class HeldReleaseAtRunEndIT {

    @Test
    void aRunsEndReleasesWorkHeldAfterItsClaim() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        OwnerLimits capOne = new OwnerLimits(1, OwnerLimits.DEFAULT_MAX_QUEUED, OwnerLimits.DEFAULT_WINDOW);
        WorkerConfig config = WorkerConfig.defaults("held-end").withSweepInterval(Duration.ofMinutes(10));
        try (Core api = Core.open(db, "api", Duration.ofSeconds(15), capOne);
             WorkerNode node = WorkerNode.open(db, config, new ProcessSandbox(), capOne)) {
            UUID first = api.service().submit(Submission.of("carol", "sleep 2")).execution().id();
            Await.until("the first runs", Duration.ofSeconds(30),
                    () -> api.submissions().find(first).filter(e -> e.status() == ExecutionStatus.RUNNING).orElse(null));
            // Submitted while the first runs: held at insert (the owner is at its cap of 1).
            Execution second = api.service().submit(Submission.of("carol", "true")).execution();
            assertThat(second.heldSince()).as("held behind the running cap").isNotNull();
            Execution done = Await.until("the second ran after the first ended", Duration.ofSeconds(30),
                    () -> api.submissions().find(second.id()).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(done.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
        }
    }
}
