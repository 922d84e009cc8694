package io.outrun.owner;

import com.zaxxer.hikari.HikariDataSource;
import io.outrun.execution.Execution;
import io.outrun.execution.ExecutionStatus;
import io.outrun.execution.Submission;
import io.outrun.service.Core;
import io.outrun.store.Database;
import io.outrun.store.DatabaseConfig;
import io.outrun.store.Lease;
import io.outrun.store.LeaseStore;
import io.outrun.store.Outcome;
import io.outrun.store.RedriveStore;
import io.outrun.store.SubmissionStore;
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

/** Per-owner caps and held work, on the real database: what the claim and the submission decide. */
class OwnerCapsIT {

    private static final Duration TTL = Duration.ofSeconds(30);

    private HikariDataSource pool;
    private SubmissionStore submissions;
    private LeaseStore leases;
    private RedriveStore redrives;
    private OwnerStore owners;

    @BeforeEach
    void open() {
        pool = Database.pool(TestDatabase.fresh(DatabaseConfig::new), "test");
        Database.migrate(pool);
        submissions = new SubmissionStore(pool);
        leases = new LeaseStore(pool);
        redrives = new RedriveStore(pool);
        owners = new OwnerStore(pool);
    }

    @AfterEach
    void close() {
        pool.close();
    }

    @Test
    void concurrentClaimsNeverRunMoreThanTheCapAndHoldTheRest() throws Exception {
        owners.set("alice", 3, null);
        for (int round = 0; round < 5; round++) {
            List<UUID> ids = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                ids.add(submissions.insert(Submission.of("alice", "true")).execution().id());
            }
            ExecutorService threads = Executors.newFixedThreadPool(8);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<LeaseStore.Claim>> claims = new ArrayList<>();
            for (UUID id : ids) {
                claims.add(threads.submit(() -> {
                    go.await();
                    return leases.claim(id, "node/" + id.toString().substring(0, 8), TTL, null);
                }));
            }
            go.countDown();
            int won = 0;
            int held = 0;
            for (Future<LeaseStore.Claim> f : claims) {
                LeaseStore.Claim c = f.get();
                won += c.execution().isPresent() ? 1 : 0;
                held += c.held() ? 1 : 0;
            }
            threads.shutdown();
            assertThat(won).as("round %d: claims won", round).isEqualTo(3);
            assertThat(held).as("round %d: claims refused by the cap hold their execution", round).isEqualTo(13);
            assertThat(Rows.on(pool).single("SELECT count(*) FROM executions WHERE owner = 'alice' AND status = 'running'"))
                    .isEqualTo(3);
            // End the round's runs (as their workers would) and drop what was held.
            Rows.on(pool).update("DELETE FROM executions WHERE owner = 'alice'");
        }
    }

    @Test
    void theOperatorsDefaultCapAppliesToOwnersWithoutTheirOwn() {
        UUID a = submissions.insert(Submission.of("bob", "true")).execution().id();
        UUID b = submissions.insert(Submission.of("bob", "true")).execution().id();
        assertThat(leases.claim(a, "n/1", TTL, 1).execution()).isPresent();
        LeaseStore.Claim second = leases.claim(b, "n/1", TTL, 1);
        assertThat(second.execution()).isEmpty();
        assertThat(second.held()).isTrue();
        Execution heldRow = submissions.find(b).orElseThrow();
        assertThat(heldRow.status()).isEqualTo(ExecutionStatus.QUEUED);
        assertThat(heldRow.heldSince()).isNotNull();
        // A held row is not claimable by a stale job: only a release gives it a new one.
        assertThat(leases.claim(b, "n/1", TTL, null).execution()).isEmpty();
        // An owner's own cap wins over the default.
        owners.set("bob", 5, null);
        assertThat(redrives.releaseHeld("bob", 1, 16)).extracting(Execution::id).containsExactly(b);
        assertThat(leases.claim(b, "n/1", TTL, 1).execution()).isPresent();
    }

    @Test
    void submissionsPastTheWindowAreHeldAndReleasedOldestFirstAsTheWindowEmpties() {
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            Execution e = submissions.insert(Submission.of("carol", "true"), null, 4).execution();
            ids.add(e.id());
            assertThat(e.heldSince() == null).as("submission %d dispatched at once", i).isEqualTo(i < 4);
        }
        assertThat(redrives.ownersWithHeld()).containsExactly("carol");
        assertThat(redrives.releaseHeld("carol", null, 4)).as("the window is full").isEmpty();
        assertThat(leases.claim(ids.get(0), "n/1", TTL, null).ownerHasHeld()).isTrue();
        assertThat(leases.claim(ids.get(1), "n/1", TTL, null).execution()).isPresent();
        List<Execution> released = redrives.releaseHeld("carol", null, 4);
        assertThat(released).extracting(Execution::id).containsExactly(ids.get(4), ids.get(5));
        assertThat(released).allSatisfy(e -> {
            assertThat(e.heldSince()).isNull();
            assertThat(e.dispatchSeq()).as("a fresh job id").isEqualTo(2);
        });
        // Under a running cap, running and dispatched both count: 2 run, 4 wait, cap 6: no room.
        owners.set("carol", 6, null);
        assertThat(redrives.releaseHeld("carol", null, 16)).isEmpty();
        owners.set("carol", 8, null);
        assertThat(redrives.releaseHeld("carol", null, 16)).extracting(Execution::id).containsExactly(ids.get(6), ids.get(7));
    }

    @Test
    void aHeldExecutionIsNeverTakenForALostDispatch() throws Exception {
        try (Core core = Core.open(TestDatabase.fresh(DatabaseConfig::new), "lost", Duration.ofSeconds(1))) {
            UUID first = core.submissions().insert(Submission.of("dave", "true"), null, 1).execution().id();
            UUID held = core.submissions().insert(Submission.of("dave", "true"), null, 1).execution().id();
            Rows.on(core.pool()).allEnqueuedAgo(Duration.ofSeconds(10));
            List<Execution> lost = core.redrives().redispatchLost(Duration.ofSeconds(1), 100);
            assertThat(lost).extracting(Execution::id).containsExactly(first).doesNotContain(held);
        }
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
        owners.set("heidi", 1, null);
        UUID a = submissions.insert(Submission.of("heidi", "true")).execution().id();
        UUID b = submissions.insert(Submission.of("heidi", "true")).execution().id();
        Execution run = leases.claim(a, "n/1", TTL, null).execution().orElseThrow();
        assertThat(leases.claim(b, "n/1", TTL, null).held()).isTrue();
        assertThat(redrives.releaseHeld("heidi", null, 16)).as("the cap is taken").isEmpty();
        Lease lease = new Lease(a, run.leaseEpoch(), run.attempt(), "n/1");
        assertThat(leases.finish(lease, Outcome.withoutOutput(ExecutionStatus.SUCCEEDED, 0, null, null))).isTrue();
        assertThat(redrives.releaseHeld("heidi", null, 16)).extracting(Execution::id).containsExactly(b);
    }
}
