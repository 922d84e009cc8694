package io.outrun.store;

import com.zaxxer.hikari.HikariDataSource;
import io.outrun.execution.Execution;
import io.outrun.execution.ExecutionStatus;
import io.outrun.execution.Submission;
import io.outrun.sandbox.capture.Captured;
import io.outrun.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
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
    private ExecutionStore store;

    @BeforeEach
    void open() {
        pool = Database.pool(TestDatabase.fresh(), "test");
        Database.migrate(pool);
        store = new ExecutionStore(pool);
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
                UUID id = store.insert(Submission.of("o", "true")).execution().id();
                force(id, from);
                boolean allowed = tryMove(id, to);
                assertThat(allowed).as(from + " -> " + to).isEqualTo(from.canMoveTo(to));
            }
        }
    }

    @Test
    void claimIsWonByExactlyOneNode() {
        UUID id = store.insert(Submission.of("o", "true")).execution().id();
        assertThat(store.claim(id, "a", Duration.ofSeconds(5))).isPresent();
        assertThat(store.claim(id, "b", Duration.ofSeconds(5))).isEmpty();
        assertThat(store.find(id).orElseThrow().attempt()).isEqualTo(1);
    }

    @Test
    void staleAttemptCannotWriteAfterRedrive() throws SQLException {
        UUID id = store.insert(Submission.of("o", "true")).execution().id();
        Execution first = store.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        expireLease(id);
        assertThat(store.redriveExpired(10)).extracting(Redriven::status).containsExactly(ExecutionStatus.QUEUED);
        Execution second = store.claim(id, "b", Duration.ofSeconds(5)).orElseThrow();
        assertThat(second.attempt()).isEqualTo(2);

        Lease stale = new Lease(id, first.attempt(), "a");
        Captured junk = new Captured("stale".getBytes(StandardCharsets.UTF_8), new byte[0], 5);
        assertThat(store.renew("a", Duration.ofSeconds(5), List.of(stale)).held()).isEmpty();
        store.flushOutput(List.of(new OutputUpdate(stale, junk, junk)));
        assertThat(store.finish(stale, new Outcome(ExecutionStatus.SUCCEEDED, 0, null, null, junk, junk))).isFalse();

        Execution row = store.find(id).orElseThrow();
        assertThat(row.status()).isEqualTo(ExecutionStatus.RUNNING);
        assertThat(row.leaseOwner()).isEqualTo("b");
        assertThat(row.stdout().totalBytes()).isZero();
        assertThat(store.finish(new Lease(id, 2, "b"), new Outcome(ExecutionStatus.SUCCEEDED, 0, null, null, junk, junk))).isTrue();
    }

    @Test
    void reapsWithAnExplanationWhenAttemptsRunOut() throws SQLException {
        UUID id = store.insert(Submission.of("o", "true").withMaxAttempts(1)).execution().id();
        store.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        expireLease(id);
        assertThat(store.redriveExpired(10)).extracting(Redriven::status).containsExactly(ExecutionStatus.FAILED);
        Execution row = store.find(id).orElseThrow();
        assertThat(row.status()).isEqualTo(ExecutionStatus.FAILED);
        assertThat(row.errorCode()).isEqualTo("lease_expired");
        assertThat(row.errorMessage()).contains("Attempt 1 of 1", "node a", "Resubmit");
        assertThat(row.finishedAt()).isNotNull();
    }

    @Test
    void lostRunWhoseOwnerAskedToCancelEndsCancelledNotRequeued() throws SQLException {
        UUID id = store.insert(Submission.of("o", "sleep 60")).execution().id();
        store.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        assertThat(store.requestCancel(id, "o")).isEqualTo(ExecutionStore.CancelResult.REQUESTED);
        expireLease(id);
        assertThat(store.redriveExpired(10)).extracting(Redriven::status).containsExactly(ExecutionStatus.CANCELLED);
        Execution row = store.find(id).orElseThrow();
        assertThat(row.status()).isEqualTo(ExecutionStatus.CANCELLED);
        assertThat(row.errorCode()).isEqualTo("cancelled");
        assertThat(row.finishedAt()).isNotNull();
    }

    @Test
    void terminalRowsNeverChange() {
        UUID id = store.insert(Submission.of("o", "true")).execution().id();
        Execution e = store.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        Lease lease = new Lease(id, e.attempt(), "a");
        Outcome ok = new Outcome(ExecutionStatus.SUCCEEDED, 0, null, null, Captured.EMPTY, Captured.EMPTY);
        assertThat(store.finish(lease, ok)).isTrue();
        assertThat(store.finish(lease, ok)).isFalse();
        assertThatThrownBy(() -> force(id, ExecutionStatus.FAILED)).isInstanceOf(SQLException.class);
    }

    @Test
    void idempotencyKeyReturnsTheFirstExecutionPerOwner() {
        var first = store.insert(Submission.of("o", "true").withIdempotencyKey("k"));
        var again = store.insert(Submission.of("o", "echo other").withIdempotencyKey("k"));
        var otherOwner = store.insert(Submission.of("p", "true").withIdempotencyKey("k"));
        assertThat(first.created()).isTrue();
        assertThat(again.created()).isFalse();
        assertThat(again.execution().id()).isEqualTo(first.execution().id());
        assertThat(otherOwner.created()).isTrue();
        assertThat(store.findOwned(first.execution().id(), "p")).isEmpty();
    }

    @Test
    void renewReportsCancelRequests() {
        UUID id = store.insert(Submission.of("o", "sleep 9")).execution().id();
        Execution e = store.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        assertThat(store.requestCancel(id, "someone-else")).isEqualTo(ExecutionStore.CancelResult.NOT_FOUND);
        assertThat(store.requestCancel(id, "o")).isEqualTo(ExecutionStore.CancelResult.REQUESTED);
        Lease lease = new Lease(id, e.attempt(), "a");
        var renewal = store.renew("a", Duration.ofSeconds(5), List.of(lease));
        assertThat(renewal.held()).isEqualTo(Set.of(lease));
        assertThat(renewal.cancelRequested()).isEqualTo(Set.of(lease));
    }

    @Test
    void unclaimGivesTheAttemptBackAndReleaseSpendsIt() {
        UUID id = store.insert(Submission.of("o", "true").withMaxAttempts(1)).execution().id();
        Execution first = store.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        Redriven back = store.unclaim(new Lease(id, first.attempt(), "a"), "engine restarting").orElseThrow();
        assertThat(back.status()).isEqualTo(ExecutionStatus.QUEUED);
        assertThat(back.attempt()).isZero();
        assertThat(back.dispatchSeq()).isEqualTo(2);
        assertThat(store.unclaim(new Lease(id, first.attempt(), "a"), "engine restarting")).as("fenced").isEmpty();

        Execution again = store.claim(id, "b", Duration.ofSeconds(5)).orElseThrow();
        assertThat(again.attempt()).isEqualTo(1);
        Redriven failed = store.release(new Lease(id, 1, "b"), "sandbox_error", "lost").orElseThrow();
        assertThat(failed.status()).isEqualTo(ExecutionStatus.FAILED);
        assertThat(store.find(id).orElseThrow().errorCode()).isEqualTo("sandbox_error");
    }

    @Test
    void anExecutionNoSandboxCanStartFailsAfterTheLastHandBack() {
        UUID id = store.insert(Submission.of("o", "true")).execution().id();
        Redriven last = null;
        for (int i = 1; i <= ExecutionStore.MAX_HANDBACKS; i++) {
            Execution claimed = store.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
            assertThat(claimed.attempt()).as("a hand-back spends no attempt").isEqualTo(1);
            last = store.unclaim(new Lease(id, claimed.attempt(), "a"), "engine down (" + i + ")").orElseThrow();
            assertThat(last.status()).isEqualTo(i < ExecutionStore.MAX_HANDBACKS ? ExecutionStatus.QUEUED : ExecutionStatus.FAILED);
        }
        Execution row = store.find(id).orElseThrow();
        assertThat(row.errorCode()).isEqualTo("sandbox_error");
        assertThat(row.errorMessage()).contains(ExecutionStore.MAX_HANDBACKS + " tries", "engine down (" + ExecutionStore.MAX_HANDBACKS + ")",
                "never ran");
        assertThat(store.claim(id, "a", Duration.ofSeconds(5))).isEmpty();
    }

    @Test
    void unclaimOfAnExecutionWhoseOwnerAskedToCancelEndsItCancelled() {
        // Claimed, then cancelled while the sandbox was starting, then the start failed: queued
        // with a cancel request could never be claimed again, so it must end here.
        UUID id = store.insert(Submission.of("o", "true")).execution().id();
        Execution claimed = store.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
        assertThat(store.requestCancel(id, "o")).isEqualTo(ExecutionStore.CancelResult.REQUESTED);
        Redriven back = store.unclaim(new Lease(id, claimed.attempt(), "a"), "engine restarting").orElseThrow();
        assertThat(back.status()).isEqualTo(ExecutionStatus.CANCELLED);
        Execution row = store.find(id).orElseThrow();
        assertThat(row.status()).isEqualTo(ExecutionStatus.CANCELLED);
        assertThat(row.errorCode()).isEqualTo("cancelled");
        assertThat(row.finishedAt()).isNotNull();
    }

    @Test
    void pruneClearsOldOutputKeepsCountsAndDeletesOnlyWhenAsked() throws SQLException {
        UUID old = store.insert(Submission.of("o", "echo x")).execution().id();
        UUID recent = store.insert(Submission.of("o", "echo y")).execution().id();
        Captured out = new Captured("hello\n".getBytes(StandardCharsets.UTF_8), new byte[0], 6);
        for (UUID id : List.of(old, recent)) {
            Execution e = store.claim(id, "a", Duration.ofSeconds(5)).orElseThrow();
            store.finish(new Lease(id, e.attempt(), "a"), new Outcome(ExecutionStatus.SUCCEEDED, 0, null, null, out, out));
        }
        exec("UPDATE executions SET finished_at = now() - interval '40 days' WHERE id = '" + old + "'");

        long[] done = store.prune(Duration.ofDays(30), null, 1);
        assertThat(done).containsExactly(1L, 0L);
        Execution pruned = store.find(old).orElseThrow();
        assertThat(pruned.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
        assertThat(pruned.stdout().totalBytes()).isEqualTo(6);
        assertThat(pruned.stdout().truncated()).isTrue();
        assertThat(pruned.stdout().text()).contains("6 bytes of output dropped");
        assertThat(store.find(recent).orElseThrow().stdout().text()).isEqualTo("hello\n");

        assertThat(store.prune(Duration.ofDays(30), Duration.ofDays(35), 10)).containsExactly(0L, 1L);
        assertThat(store.find(old)).isEmpty();
        assertThat(store.find(recent)).isPresent();
    }

    private void force(UUID id, ExecutionStatus status) throws SQLException {
        // Walk a legal path to the wanted state, as the system would.
        switch (status) {
            case QUEUED -> { }
            case RUNNING -> exec("UPDATE executions SET status='running', attempt=1, lease_owner='x', lease_expires_at=now() WHERE id='" + id + "'");
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
                    + (to.isTerminal() ? " finished_at=now(), lease_owner=NULL, lease_expires_at=NULL" : " finished_at=NULL")
                    + (to == ExecutionStatus.RUNNING ? ", attempt=1, lease_owner='y', lease_expires_at=now()" : "")
                    + (to == ExecutionStatus.QUEUED ? ", lease_owner=NULL, lease_expires_at=NULL" : "")
                    + " WHERE id='" + id + "'");
            return true;
        } catch (SQLException e) {
            assertThat(e.getMessage()).contains("execution");
            return false;
        }
    }

    private void expireLease(UUID id) throws SQLException {
        exec("UPDATE executions SET lease_expires_at = now() - interval '1 second' WHERE id='" + id + "'");
    }

    private void exec(String sql) throws SQLException {
        try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }
}
