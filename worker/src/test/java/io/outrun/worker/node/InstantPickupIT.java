package io.outrun.worker.node;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.Submission;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * New work reaches an idle node through its wake-up (the NOTIFY a submit sends), not through the
 * claim loop's fallback poll: with the poll at 30 s, every execution must still start within a
 * second or two of its submit.
 */
class InstantPickupIT {

    @Test
    void idleNodeStartsNewWorkAtOnceNotAtItsNextPoll() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        WorkerConfig config = WorkerConfig.defaults("fast").withPollInterval(Duration.ofSeconds(30));
        try (Core api = Core.open(db, "api");
             WorkerNode node = WorkerNode.open(db, config, new ProcessSandbox(), Limits.DEFAULTS)) {
            // One after the other: the loop's first look (at its start) may serve the first, but the
            // next poll is 30 s away, so every later execution can only start through a wake-up.
            for (int i = 0; i < 5; i++) {
                UUID id = api.service().submit(Submission.of("alice", "true")).execution().id();
                Execution started = Await.until("start", Duration.ofSeconds(40),
                        () -> api.submissions().find(id).filter(e -> e.startedAt() != null).orElse(null));
                long waitedMs = Duration.between(started.createdAt(), started.startedAt()).toMillis();
                assertThat(waitedMs).as("submit to start, ms (the poll is 30 s)").isLessThan(2000);
                Await.until("end", Duration.ofSeconds(10), () -> api.submissions().find(id).orElseThrow().status().isTerminal());
            }
        }
    }
}
