package io.outrun.worker.node;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.RunInputs;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of issue 24 (not part of the suite): an execution held back by its owner's cap or by a
 * busy workspace, on a fleet of two nodes, starts when the run that held it ends, not at a poll.
 * The wake-up of its submit goes to the node with a free slot, which cannot take it (held) and
 * never has a slot free again; the node whose run ends claimed that run when nothing else was
 * queued ({@code more} false), so it does not look either. Poll at 30 s to make the wait visible.
 */
class HeldBackWorkIT {

    @Test
    void capHeldExecutionStartsWhenTheRunHoldingItEnds() throws Exception {
        heldExecutionStartsAtTheEnd(false);
    }

    @Test
    void workspaceHeldExecutionStartsWhenTheRunHoldingItEnds() throws Exception {
        heldExecutionStartsAtTheEnd(true);
    }

    private static void heldExecutionStartsAtTheEnd(boolean workspace) throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core api = Core.open(db, "api");
             WorkerProcess a = WorkerProcess.startWith(db, "held-a", 1, "process", "--poll-interval-s", "30");
             WorkerProcess b = WorkerProcess.startWith(db, "held-b", 1, "process", "--poll-interval-s", "30")) {
            if (!workspace) {
                api.owners().set("alice", 1, null);
            }
            RunInputs inputs = workspace ? new RunInputs(null, List.of(), "main") : RunInputs.NONE;
            UUID first = api.service().submit(Submission.of("alice", "sleep 8").withInputs(inputs)).execution().id();
            Await.until("the first runs", Duration.ofSeconds(30),
                    () -> api.submissions().find(first).filter(e -> e.startedAt() != null).orElse(null));
            // A heartbeat (every ttl/3) records the first's node as full.
            Await.until("the first's node recorded full", Duration.ofSeconds(30), () -> Rows.on(api.pool()).single(
                    "SELECT count(*) FROM nodes n JOIN executions e ON e.lease_owner = n.incarnation"
                            + " WHERE e.id = ? AND n.running >= n.slots", first) == 1);
            UUID second = api.service().submit(Submission.of("alice", "echo two").withInputs(inputs)).execution().id();
            Execution two = Await.until("the second ends", Duration.ofSeconds(90),
                    () -> api.submissions().find(second).filter(e -> e.status().isTerminal()).orElse(null));
            Execution one = api.submissions().find(first).orElseThrow();
            Duration gap = Duration.between(one.finishedAt(), two.startedAt());
            System.out.printf("HELD BACK (%s): the first ended, the second started %d ms later (poll 30 s)%n",
                    workspace ? "workspace" : "cap", gap.toMillis());
            assertThat(gap).as("from the holding run's end to the held execution's start").isLessThan(Duration.ofSeconds(3));
        }
    }
}
