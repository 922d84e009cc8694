package io.outrun.core.store;

import io.outrun.worker.lease.LeaseStore;
import io.outrun.worker.maintenance.RetentionStore;
import com.zaxxer.hikari.HikariDataSource;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.model.output.Captured;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ExecutionStoreIT {

    private HikariDataSource pool;
    private SubmissionStore submissions;
    private LeaseStore leases;
    private RedriveStore redrives;
    private RetentionStore retention;

    @BeforeEach
    void open() {
        pool = Database.pool(TestDatabase.fresh(DatabaseConfig::new), "test");
        Database.migrate(pool);
        submissions = new SubmissionStore(pool);
        leases = new LeaseStore(pool);
        redrives = new RedriveStore(pool);
        retention = new RetentionStore(pool);
    }

    @AfterEach
    void close() {
        pool.close();
    }

    @Test
    void databaseAllowsExactlyTheTransitionsOfTheStateMachine() throws SQLException {
        for (ExecutionStatus from : ExecutionStatus.values()) {
            for (ExecutionStatus to : ExecutionStatus.values()) {
                if (from == to) {
                    continue;
                }
                UUID id = submissions.insert(Submission.of("o", "true")).execution().id();
                force(id, from);
                boolean allowed = tryMove(id, to);
                assertThat(allowed).as(from + " -> " + to).isEqualTo(from.canMoveTo(to));
            }
        }
    }

    @Test
    void claimIsWonByExactlyOneNode() {
        UUID id = submissions.insert(Submission.of("o", "true")).execution().id();
        assertThat(leases.claim(id, "a", Duration.ofSeconds(5))).isPresent();
        assertThat(leases.claim(id, "b", Duration.ofSeconds(5))).isEmpty();
        assertThat(submissions.find(id).orElseThrow().attempt()).isEqualTo(1);
    }

    @Test
    void staleAttemptCannotWriteAfterRedrive() throws SQLException {
        UUID id = submissions.insert(Submission.of("o", "true")).execution().id();
        Execution first = leases.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        expireLease(id);
        assertThat(redrives.redriveExpired(10)).extracting(Departed::status).containsExactly(ExecutionStatus.QUEUED);
        Execution second = leases.claim(id, "b", Duration.ofSeconds(5)).orElseThrow();
        assertThat(second.attempt()).isEqualTo(2);

        assertThat(second.leaseEpoch()).isGreaterThan(first.leaseEpoch());

        Lease stale = lease(first);
        assertThat(renew("a", stale).renewed()).isEmpty();
        assertThat(append("a", output(stale, "stale"))).isEmpty();
        assertThat(leases.finish(stale, new Outcome(ExecutionStatus.SUCCEEDED, 0, null, null, output(stale, "stale"), 5, 0)).written()).isFalse();

        Execution row = submissions.find(id).orElseThrow();
        assertThat(row.status()).isEqualTo(ExecutionStatus.RUNNING);
        assertThat(row.leaseHolder()).isEqualTo("b");
        assertThat(row.stdout().totalBytes()).isZero();
        assertThat(leases.finish(lease(second), new Outcome(ExecutionStatus.SUCCEEDED, 0, null, null, output(lease(second), "ok"), 2, 0)).written()).isTrue();
        assertThat(submissions.find(id).orElseThrow().stdout().text()).isEqualTo("ok");
    }

    @Test
    void reapsWithAnExplanationWhenAttemptsRunOut() throws SQLException {
        UUID id = submissions.insert(Submission.of("o", "true").withMaxAttempts(1)).execution().id();
        leases.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        expireLease(id);
        assertThat(redrives.redriveExpired(10)).extracting(Departed::status).containsExactly(ExecutionStatus.FAILED);
        Execution row = submissions.find(id).orElseThrow();
        assertThat(row.status()).isEqualTo(ExecutionStatus.FAILED);
        assertThat(row.errorCode()).isEqualTo("lease_expired");
        assertThat(row.errorMessage()).contains("Attempt 1 of 1", "(a)", "Resubmit");
        assertThat(row.finishedAt()).isNotNull();
    }

    @Test
    void lostRunWhoseOwnerAskedToCancelEndsCancelledNotRequeued() throws SQLException {
        UUID id = submissions.insert(Submission.of("o", "sleep 60")).execution().id();
        leases.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        assertThat(submissions.requestCancel(id, "o")).isEqualTo(SubmissionStore.CancelResult.REQUESTED);
        expireLease(id);
        assertThat(redrives.redriveExpired(10)).extracting(Departed::status).containsExactly(ExecutionStatus.CANCELLED);
        Execution row = submissions.find(id).orElseThrow();
        assertThat(row.status()).isEqualTo(ExecutionStatus.CANCELLED);
        assertThat(row.errorCode()).isEqualTo("cancelled");
        assertThat(row.finishedAt()).isNotNull();
    }

    @Test
    void terminalRowsNeverChange() {
        UUID id = submissions.insert(Submission.of("o", "true")).execution().id();
        Execution e = leases.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        Lease lease = lease(e);
        Outcome ok = Outcome.withoutOutput(ExecutionStatus.SUCCEEDED, 0, null, null);
        assertThat(leases.finish(lease, ok).written()).isTrue();
        assertThat(leases.finish(lease, ok).written()).isFalse();
        assertThatThrownBy(() -> force(id, ExecutionStatus.FAILED)).isInstanceOf(SQLException.class);
    }

    @Test
    void idempotencyKeyReturnsTheFirstExecutionPerOwner() {
        var first = submissions.insert(Submission.of("o", "true").withIdempotencyKey("k"));
        var again = submissions.insert(Submission.of("o", "echo other").withIdempotencyKey("k"));
        var otherOwner = submissions.insert(Submission.of("p", "true").withIdempotencyKey("k"));
        assertThat(first.created()).isTrue();
        assertThat(again.created()).isFalse();
        assertThat(again.execution().id()).isEqualTo(first.execution().id());
        assertThat(otherOwner.created()).isTrue();
        assertThat(submissions.findOwned(first.execution().id(), "p")).isEmpty();
    }

    @Test
    void renewReportsCancelRequests() {
        UUID id = submissions.insert(Submission.of("o", "sleep 9")).execution().id();
        Execution e = leases.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        assertThat(submissions.requestCancel(id, "someone-else")).isEqualTo(SubmissionStore.CancelResult.NOT_FOUND);
        assertThat(submissions.requestCancel(id, "o")).isEqualTo(SubmissionStore.CancelResult.REQUESTED);
        Lease lease = lease(e);
        var renewal = renew("a", lease);
        assertThat(renewal.renewed()).isEqualTo(Set.of(lease));
        assertThat(renewal.cancelRequested()).isEqualTo(Set.of(lease));
    }

    @Test
    void unclaimGivesTheAttemptBackAndReleaseSpendsIt() {
        UUID id = submissions.insert(Submission.of("o", "true").withMaxAttempts(1)).execution().id();
        Execution first = leases.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        Departed back = leases.handBack(lease(first), "engine restarting", Duration.ZERO).orElseThrow();
        assertThat(back.status()).isEqualTo(ExecutionStatus.QUEUED);
        assertThat(back.attempt()).isZero();
        assertThat(back.bookSeq()).isEqualTo(2);
        assertThat(leases.handBack(lease(first), "engine restarting", Duration.ZERO)).as("fenced").isEmpty();

        Execution again = leases.claim(id, "b", Duration.ofSeconds(5)).orElseThrow();
        assertThat(again.attempt()).isEqualTo(1);
        assertThat(again.leaseEpoch()).as("a hand-back never gives its epoch back").isEqualTo(first.leaseEpoch() + 1);
        assertThat(leases.isStaleRun(id, first.leaseEpoch(), "c")).as("the handed-back run is dead everywhere").isTrue();
        assertThat(leases.isStaleRun(id, again.leaseEpoch(), "c")).as("b's run is live").isFalse();
        Departed failed = leases.abandon(lease(again), "sandbox_error", "lost", Duration.ZERO).orElseThrow();
        assertThat(failed.status()).isEqualTo(ExecutionStatus.FAILED);
        assertThat(submissions.find(id).orElseThrow().errorCode()).isEqualTo("sandbox_error");
    }

    @Test
    void anExecutionNoSandboxCanStartFailsAfterTheLastHandBack() {
        UUID id = submissions.insert(Submission.of("o", "true")).execution().id();
        Departed last = null;
        for (int i = 1; i <= LeaseStore.MAX_HANDBACKS; i++) {
            Execution claimed = leases.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
            assertThat(claimed.attempt()).as("a hand-back spends no attempt").isEqualTo(1);
            last = leases.handBack(lease(claimed), "engine down (" + i + ")", Duration.ZERO).orElseThrow();
            assertThat(last.status()).isEqualTo(i < LeaseStore.MAX_HANDBACKS ? ExecutionStatus.QUEUED : ExecutionStatus.FAILED);
        }
        Execution row = submissions.find(id).orElseThrow();
        assertThat(row.errorCode()).isEqualTo("sandbox_error");
        assertThat(row.errorMessage()).contains(LeaseStore.MAX_HANDBACKS + " tries", "engine down (" + LeaseStore.MAX_HANDBACKS + ")",
                "never ran");
        assertThat(leases.claim(id, "a", Duration.ofSeconds(5))).isEmpty();
    }

    @Test
    void unclaimOfAnExecutionWhoseOwnerAskedToCancelEndsItCancelled() {
        // Claimed, then cancelled while the sandbox was starting, then the start failed: queued
        // with a cancel request could never be claimed again, so it must end here.
        UUID id = submissions.insert(Submission.of("o", "true")).execution().id();
        Execution claimed = leases.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        assertThat(submissions.requestCancel(id, "o")).isEqualTo(SubmissionStore.CancelResult.REQUESTED);
        Departed back = leases.handBack(lease(claimed), "engine restarting", Duration.ZERO).orElseThrow();
        assertThat(back.status()).isEqualTo(ExecutionStatus.CANCELLED);
        Execution row = submissions.find(id).orElseThrow();
        assertThat(row.status()).isEqualTo(ExecutionStatus.CANCELLED);
        assertThat(row.errorCode()).isEqualTo("cancelled");
        assertThat(row.finishedAt()).isNotNull();
    }

    @Test
    void pruneClearsOldOutputKeepsCountsAndDeletesOnlyWhenAsked() throws SQLException {
        UUID old = submissions.insert(Submission.of("o", "echo x")).execution().id();
        UUID recent = submissions.insert(Submission.of("o", "echo y")).execution().id();
        for (UUID id : List.of(old, recent)) {
            Execution e = leases.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
            leases.finish(lease(e), new Outcome(ExecutionStatus.SUCCEEDED, 0, null, null, output(lease(e), "hello\n"), 6, 0)).written();
        }
        exec("UPDATE executions SET finished_at = now() - interval '40 days' WHERE id = '" + old + "'");

        long[] done = retention.prune(Duration.ofDays(30), null, 1);
        assertThat(done).containsExactly(1L, 0L);
        Execution pruned = submissions.find(old).orElseThrow();
        assertThat(pruned.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
        assertThat(pruned.stdout().totalBytes()).isEqualTo(6);
        assertThat(pruned.stdout().truncated()).isTrue();
        assertThat(pruned.stdout().text()).contains("6 bytes of output dropped");
        assertThat(submissions.find(recent).orElseThrow().stdout().text()).isEqualTo("hello\n");

        assertThat(retention.prune(Duration.ofDays(30), Duration.ofDays(35), 10)).containsExactly(0L, 1L);
        assertThat(submissions.find(old)).isEmpty();
        assertThat(submissions.find(recent)).isPresent();
    }

    private void force(UUID id, ExecutionStatus status) throws SQLException {
        // Walk a legal path to the wanted state, as the system would.
        switch (status) {
            case QUEUED -> { }
            case RUNNING -> exec("UPDATE executions SET status='running', attempt=1, lease_owner='x' WHERE id='" + id + "'");
            case CANCELLED -> exec("UPDATE executions SET status='cancelled', finished_at=now() WHERE id='" + id + "'");
            default -> {
                force(id, ExecutionStatus.RUNNING);
                exec("UPDATE executions SET status='" + status.wire() + "', finished_at=now(), lease_owner=NULL WHERE id='" + id + "'");
            }
        }
    }

    private boolean tryMove(UUID id, ExecutionStatus to) {
        try {
            exec("UPDATE executions SET status='" + to.wire() + "',"
                    + (to.isTerminal() ? " finished_at=now(), lease_owner=NULL" : " finished_at=NULL")
                    + (to == ExecutionStatus.RUNNING ? ", attempt=1, lease_owner='y'" : "")
                    + (to == ExecutionStatus.QUEUED ? ", lease_owner=NULL" : "")
                    + " WHERE id='" + id + "'");
            return true;
        } catch (SQLException e) {
            assertThat(e.getMessage()).contains("execution");
            return false;
        }
    }

    private void expireLease(UUID id) throws SQLException {
        Rows.on(pool).expireLease(id, Duration.ofMinutes(1));
    }

    private static Lease lease(Execution claimed) {
        return new Lease(claimed.id(), claimed.leaseEpoch(), claimed.attempt(), claimed.leaseHolder());
    }

    private static OutputUpdate output(Lease lease, String stdout) {
        return new OutputUpdate(lease, List.of(new Chunk(lease.executionId(), lease.epoch(), Chunk.STDOUT, 0,
                stdout.getBytes(StandardCharsets.UTF_8))), 0, 0);
    }

    private Heartbeat.Answer renew(String owner, Lease... leases) {
        try (Connection c = pool.getConnection()) {
            return Heartbeat.beat(c, new Heartbeat.NodeState(owner, owner, "test", "outrun_wake_test", 4, leases.length, false),
                    Duration.ofSeconds(5), List.of(leases), 5);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private Set<UUID> append(String owner, OutputUpdate... updates) {
        try (Connection c = pool.getConnection()) {
            return OutputStore.append(c, owner, List.of(updates));
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void renewalNeverRevivesAnExpiredLease() throws SQLException {
        UUID id = submissions.insert(Submission.of("o", "sleep 9")).execution().id();
        Execution e = leases.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        Rows.on(pool).expireLease(id, Duration.ofMillis(1));
        assertThat(renew("a", lease(e)).renewed()).as("expired: judged dead, never revived").isEmpty();
        assertThat(append("a", output(lease(e), "late"))).isEmpty();
    }

    @Test
    void outputIsAppendedAsChunksAndReadBackAsHeadAndTail() {
        // 10 bytes kept: a head of 5, a tail of 5.
        UUID id = submissions.insert(Submission.of("o", "x").withMaxOutputBytes(10)).execution().id();
        Execution e = leases.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        Lease l = lease(e);
        byte[] all = "0123456789abcdefghij".getBytes(StandardCharsets.UTF_8);
        append("a", new OutputUpdate(l, List.of(new Chunk(id, l.epoch(), 1, 0, java.util.Arrays.copyOfRange(all, 0, 5)),
                new Chunk(id, l.epoch(), 1, 5, java.util.Arrays.copyOfRange(all, 5, 8))), 0, 0));
        assertThat(submissions.find(id).orElseThrow().stdout().text()).isEqualTo("01234567");
        // Bytes 8..15 were dropped by the capture; the tail now ends at 20.
        append("a", new OutputUpdate(l, List.of(new Chunk(id, l.epoch(), 1, 15, java.util.Arrays.copyOfRange(all, 15, 20))),
                0, 0));
        Execution read = submissions.find(id).orElseThrow();
        assertThat(read.stdout().totalBytes()).isEqualTo(20);
        assertThat(read.stdout().text()).isEqualTo("01234" + Captured.marker(10) + "fghij");
        // A reader after its cursor loads only what it returns.
        Execution since = submissions.findOwned(id, "o", OutputStore.Read.since(17, 0)).orElseThrow();
        assertThat(since.stdout().since(17).text()).isEqualTo("hij");
        // Chunks that fell out of the tail are dropped; what is shown stays the same.
        append("a", new OutputUpdate(l, List.of(), 15, 0));
        assertThat(submissions.find(id).orElseThrow().stdout().text()).isEqualTo("01234" + Captured.marker(10) + "fghij");
    }

    @Test
    void aHandBackShowsThePreviousAttemptsOutputAgain() throws SQLException {
        UUID id = submissions.insert(Submission.of("o", "x")).execution().id();
        Execution first = leases.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        append("a", output(lease(first), "first attempt"));
        expireLease(id);
        redrives.redriveExpired(10);
        Execution second = leases.claim(id, "b", Duration.ofSeconds(5)).orElseThrow();
        assertThat(submissions.find(id).orElseThrow().stdout().text()).as("a new attempt shows its own output").isEmpty();
        leases.handBack(lease(second), "engine restarting", Duration.ZERO).orElseThrow();
        assertThat(submissions.find(id).orElseThrow().stdout().text()).as("a claim that never ran hides nothing").isEqualTo("first attempt");
    }

    private void exec(String sql) throws SQLException {
        Rows.on(pool).update(sql);
    }
}
