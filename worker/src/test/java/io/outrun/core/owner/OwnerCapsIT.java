package io.outrun.core.owner;

import com.zaxxer.hikari.HikariDataSource;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.RunInputs;
import io.outrun.core.execution.Submission;
import io.outrun.core.store.Database;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.core.store.Lease;
import io.outrun.worker.lease.LeaseStore;
import io.outrun.worker.lease.LeaseStore.Batch;
import io.outrun.worker.lease.LeaseStore.Claimed;
import io.outrun.core.store.Outcome;
import io.outrun.core.store.SubmissionStore;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Per-owner caps and fair claims, on the real database: what the claim and the submission decide. */
class OwnerCapsIT {

    private static final Duration TTL = Duration.ofSeconds(30);

    private HikariDataSource pool;
    private SubmissionStore submissions;
    private LeaseStore leases;
    private OwnerStore owners;

    @BeforeEach
    void open() {
        pool = Database.pool(TestDatabase.fresh(DatabaseConfig::new), "test");
        Database.migrate(pool);
        submissions = new SubmissionStore(pool);
        leases = new LeaseStore(pool);
        owners = new OwnerStore(pool);
    }

    @AfterEach
    void close() {
        pool.close();
    }

    @Test
    void concurrentClaimsOfManyNodesNeverRunMoreThanTheCap() throws Exception {
        owners.set("alice", 3, null);
        for (int round = 0; round < 5; round++) {
            for (int i = 0; i < 16; i++) {
                submissions.insert(Submission.of("alice", "true"));
            }
            ExecutorService threads = Executors.newFixedThreadPool(8);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<Batch>> claims = new ArrayList<>();
            for (int node = 0; node < 8; node++) {
                String incarnation = "node/" + node;
                claims.add(threads.submit(() -> {
                    go.await();
                    return leases.claim(incarnation, 4, TTL, null);
                }));
            }
            go.countDown();
            int won = 0;
            for (Future<Batch> f : claims) {
                won += f.get().claimed().size();
            }
            threads.shutdown();
            assertThat(won).as("round %d: claims won by 8 nodes of 4 free slots", round).isEqualTo(3);
            assertThat(Rows.on(pool).single("SELECT count(*) FROM executions WHERE owner = 'alice' AND status = 'running'"))
                    .isEqualTo(3);
            assertThat(Rows.on(pool).single("SELECT count(*) FROM executions WHERE owner = 'alice' AND status = 'queued'"))
                    .as("the rest wait, claimable").isEqualTo(13);
            Rows.on(pool).update("DELETE FROM executions WHERE owner = 'alice'");
        }
    }

    @Test
    void theOperatorsDefaultCapAppliesToOwnersWithoutTheirOwn() {
        submissions.insert(Submission.of("bob", "true"));
        submissions.insert(Submission.of("bob", "true"));
        assertThat(leases.claim("n/1", 4, TTL, 1).claimed()).hasSize(1);
        assertThat(leases.claim("n/1", 4, TTL, 1).claimed()).as("at the default cap").isEmpty();
        // An owner's own cap wins over the default.
        owners.set("bob", 5, null);
        assertThat(leases.claim("n/1", 4, TTL, 1).claimed()).hasSize(1);
    }

    @Test
    void eachSlotGoesToTheOwnerWithTheFewestRunning() {
        List<UUID> carol = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            carol.add(submissions.insert(Submission.of("carol", "sleep 20")).execution().id());
        }
        UUID dave1 = submissions.insert(Submission.of("dave", "true")).execution().id();
        UUID dave2 = submissions.insert(Submission.of("dave", "true")).execution().id();
        // Three of carol's run already.
        for (int i = 0; i < 3; i++) {
            assertThat(leases.claim(carol.get(i), "n/1", TTL)).isPresent();
        }
        // A freed slot goes to dave (0 running), although carol's work is older.
        assertThat(ids(leases.claim("n/1", 1, TTL, null))).containsExactly(dave1);
        // With one running each side... dave 1, carol 3: dave again.
        assertThat(ids(leases.claim("n/1", 1, TTL, null))).containsExactly(dave2);
        // Dave has nothing left: a lone owner fills every free slot, oldest first.
        assertThat(ids(leases.claim("n/1", 4, TTL, null))).containsExactly(carol.get(3), carol.get(4), carol.get(5),
                carol.get(6));
    }

    @Test
    void aBatchInterleavesOwnersByTheirRunningCount() {
        List<UUID> erin = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            erin.add(submissions.insert(Submission.of("erin", "true")).execution().id());
        }
        UUID frank = submissions.insert(Submission.of("frank", "true")).execution().id();
        // Four slots, nobody running: erin's first (oldest), frank's first, then erin's next two.
        assertThat(ids(leases.claim("n/1", 4, TTL, null))).containsExactlyInAnyOrder(erin.get(0), frank, erin.get(1),
                erin.get(2));
    }

    @Test
    void twoRunsOfOneWorkspaceNeverOverlap() {
        RunInputs ws = new RunInputs(null, List.of(), "build");
        UUID first = submissions.insert(Submission.of("grace", "true").withInputs(ws)).execution().id();
        UUID second = submissions.insert(Submission.of("grace", "true").withInputs(ws)).execution().id();
        UUID other = submissions.insert(Submission.of("grace", "true")).execution().id();
        Batch batch = leases.claim("n/1", 4, TTL, null);
        assertThat(ids(batch)).as("one run of the workspace per batch").containsExactlyInAnyOrder(first, other);
        assertThat(leases.claim("n/1", 4, TTL, null).claimed()).as("busy workspace").isEmpty();
        Execution run = batch.claimed().stream().map(Claimed::execution).filter(e -> e.id().equals(first)).findFirst()
                .orElseThrow();
        assertThat(leases.finish(lease(run), Outcome.withoutOutput(ExecutionStatus.SUCCEEDED, 0, null, null)).written()).isTrue();
        assertThat(ids(leases.claim("n/1", 4, TTL, null))).containsExactly(second);
    }

    @Test
    void aHandedBackExecutionWaitsOutItsPause() throws Exception {
        UUID id = submissions.insert(Submission.of("heidi", "true")).execution().id();
        Execution run = leases.claim(id, "n/1", TTL).orElseThrow();
        assertThat(leases.handBack(lease(run), "engine restarting", Duration.ofSeconds(30))).isPresent();
        assertThat(leases.claim("n/1", 4, TTL, null).claimed()).as("within its pause").isEmpty();
        Rows.on(pool).update("UPDATE executions SET enqueued_at = now() - interval '1 second' WHERE id = ?", id);
        assertThat(ids(leases.claim("n/1", 4, TTL, null))).containsExactly(id);
    }

    @Test
    void theQueueGateRefusesPastTheCapAndCountsOwnersApart() {
        QueueGate gate = new QueueGate(owners, 3);
        for (int i = 0; i < 3; i++) {
            gate.admit("erin");
            submissions.insert(Submission.of("erin", "true"));
        }
        assertThatThrownBy(() -> gate.admit("erin")).isInstanceOf(TooManyQueuedException.class)
                .satisfies(e -> assertThat(((TooManyQueuedException) e).cap()).isEqualTo(3));
        gate.admit("frank");
        owners.set("grace", null, 1);
        gate.admit("grace");
        assertThatThrownBy(() -> gate.admit("grace")).isInstanceOf(TooManyQueuedException.class);
    }

    @Test
    void anEndedRunFreesItsSlotUnderTheCap() {
        owners.set("ivan", 1, null);
        UUID a = submissions.insert(Submission.of("ivan", "true")).execution().id();
        UUID b = submissions.insert(Submission.of("ivan", "true")).execution().id();
        Execution run = leases.claim(a, "n/1", TTL).orElseThrow();
        assertThat(leases.claim("n/1", 4, TTL, null).claimed()).as("the cap is taken").isEmpty();
        assertThat(leases.finish(lease(run), Outcome.withoutOutput(ExecutionStatus.SUCCEEDED, 0, null, null)).written()).isTrue();
        assertThat(ids(leases.claim("n/1", 4, TTL, null))).containsExactly(b);
    }

    private static List<UUID> ids(Batch batch) {
        return batch.claimed().stream().map(c -> c.execution().id()).toList();
    }

    private static Lease lease(Execution run) {
        return new Lease(run.id(), run.leaseEpoch(), run.attempt(), run.leaseHolder());
    }
}
