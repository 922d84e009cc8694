package io.outrun.lease;

import io.outrun.execution.Execution;
import io.outrun.execution.ExecutionStatus;
import io.outrun.execution.Submission;
import io.outrun.metrics.NodeMetrics;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.store.Database;
import io.outrun.store.DatabaseConfig;
import io.outrun.store.ExecutionStore;
import io.outrun.store.Lease;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The heartbeat of one node against a real PostgreSQL and real processes: leases are held per
 * attempt, and an attempt whose sandbox is still starting keeps its lease.
 */
class LeaseKeeperIT {

    private static final String NODE = "keeper-node";
    private static final Duration TTL = Duration.ofSeconds(3);

    private HikariDataSource pool;
    private ExecutionStore store;
    private LeaseKeeper keeper;
    private final ProcessSandbox sandbox = new ProcessSandbox();
    private final List<Run> started = new ArrayList<>();

    @BeforeEach
    void start() {
        DatabaseConfig db = TestDatabase.migrated();
        pool = Database.pool(db, "keeper-test");
        store = new ExecutionStore(pool);
        keeper = new LeaseKeeper(store, NODE, TTL, Duration.ofMillis(500), new NodeMetrics(NODE));
    }

    @AfterEach
    void stop() {
        started.forEach(Run::close); // kills what is still running
        keeper.close();
        sandbox.close();
        pool.close();
    }

    @Test
    void twoAttemptsOfOneExecutionOnOneNodeEachTouchOnlyTheirOwn() throws Exception {
        UUID id = store.insert(Submission.of("o", "sleep 30")).execution().id();
        Lease first = claim(id);
        keeper.reserve(first);
        Tracked firstTracked = startAndTrack(first);

        // Attempt 1 stalls past its lease (say a long pause) and is re-driven; attempt 2 lands here too.
        expireAndRedrive(id);
        Lease second = claim(id);
        assertThat(second.attempt()).isEqualTo(2);
        keeper.reserve(second);
        Tracked secondTracked = startAndTrack(second);

        assertThat(firstTracked.leaseLost()).as("the stale attempt is killed").isTrue();
        assertThat(firstTracked.run().awaitExit(Duration.ofSeconds(5))).isPresent();
        keeper.untrack(first); // what the stale attempt's job does as it ends
        assertThat(keeper.isRunning(id, 2)).as("the live attempt is still tracked").isTrue();
        assertThat(keeper.isRunning(id, 1)).isFalse();

        shortenLease(id);
        keeper.renew();
        assertThat(secondTracked.leaseLost()).isFalse();
        assertThat(secondTracked.run().awaitExit(Duration.ofMillis(100))).as("the live attempt still runs").isEmpty();
        assertThat(leaseSecondsLeft(id)).as("attempt 2's lease renewed").isGreaterThan(TTL.toSeconds() - 1.0);
    }

    @Test
    void anOlderAttemptTrackedLateNeverKillsTheNewerOne() throws Exception {
        // Attempt 1's sandbox start outlived its lease; attempt 2 was claimed here and runs. When
        // attempt 1's start finally returns, attempt 1 is the stale one, not attempt 2.
        UUID id = store.insert(Submission.of("o", "sleep 30")).execution().id();
        Lease first = claim(id);
        keeper.reserve(first);
        expireAndRedrive(id);
        Lease second = claim(id);
        keeper.reserve(second);
        Tracked secondTracked = startAndTrack(second);
        Tracked firstTracked = startAndTrack(first);

        assertThat(firstTracked.leaseLost()).as("the older attempt is the one killed").isTrue();
        assertThat(firstTracked.run().awaitExit(Duration.ofSeconds(5))).isPresent();
        assertThat(secondTracked.leaseLost()).isFalse();
        assertThat(secondTracked.run().awaitExit(Duration.ofMillis(200))).as("the newer attempt still runs").isEmpty();
    }

    @Test
    void aLeaseIsRenewedWhileItsRunStartsAndALostOneKillsTheRunOnceTracked() throws Exception {
        UUID slow = store.insert(Submission.of("o", "sleep 30")).execution().id();
        Lease starting = claim(slow);
        keeper.reserve(starting);
        // A sandbox start that outlasts its lease by a whole ttl (a slow Docker engine): the
        // heartbeat keeps the lease.
        java.time.Instant claimedUntil = store.find(slow).orElseThrow().leaseExpiresAt();
        Await.until("a ttl past the lease the claim gave", Duration.ofSeconds(15), () -> dbClockPast(claimedUntil.plus(TTL)));
        assertThat(store.redriveExpired(slow, 10)).as("nothing to re-drive: the lease was renewed").isEmpty();
        Execution row = store.find(slow).orElseThrow();
        assertThat(row.status()).isEqualTo(ExecutionStatus.RUNNING);
        assertThat(row.attempt()).isEqualTo(1);
        keeper.untrack(starting);

        // A lease lost while starting (re-driven elsewhere): once the run exists, it is killed at once.
        UUID lost = store.insert(Submission.of("o", "sleep 30")).execution().id();
        Lease lease = claim(lost);
        keeper.reserve(lease);
        expireAndRedrive(lost);
        keeper.renew();
        Tracked tracked = startAndTrack(lease);
        assertThat(tracked.leaseLost()).isTrue();
        assertThat(tracked.run().awaitExit(Duration.ofSeconds(5))).as("killed").isPresent();
    }

    /** What a job does once its sandbox started: the run is closed after the test. */
    private Tracked startAndTrack(Lease lease) {
        Run run = sandbox.start(spec(lease));
        started.add(run);
        return keeper.track(lease, run);
    }

    private Lease claim(UUID id) {
        Execution e = store.claim(id, NODE, TTL).orElseThrow();
        return new Lease(id, e.attempt(), NODE);
    }

    /** As if the lease ran out: the keeper's own heartbeat may renew it in between, so try again then. */
    private void expireAndRedrive(UUID id) throws Exception {
        int moved = 0;
        for (int tries = 0; tries < 10 && moved == 0; tries++) {
            try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(
                    "UPDATE executions SET lease_expires_at = now() - interval '1 second' WHERE id = ?")) {
                ps.setObject(1, id);
                assertThat(ps.executeUpdate()).isEqualTo(1);
            }
            moved = store.redriveExpired(id, 10).size();
        }
        assertThat(moved).isEqualTo(1);
        Await.until("queued again", Duration.ofSeconds(5), () -> store.find(id).orElseThrow().status() == ExecutionStatus.QUEUED);
    }

    private boolean dbClockPast(java.time.Instant instant) {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT now() > ?")) {
            ps.setObject(1, instant.atOffset(java.time.ZoneOffset.UTC));
            try (var rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Leaves a second on the live lease, so that only a renewal can bring it back above the ttl. */
    private void shortenLease(UUID id) throws Exception {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE executions SET lease_expires_at = now() + interval '1 second' WHERE id = ?")) {
            ps.setObject(1, id);
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
    }

    private double leaseSecondsLeft(UUID id) throws Exception {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT extract(epoch FROM lease_expires_at - now()) FROM executions WHERE id = ? AND attempt = 2")) {
            ps.setObject(1, id);
            try (var rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return rs.getDouble(1);
            }
        }
    }

    private static RunSpec spec(Lease lease) {
        UUID id = lease.executionId();
        RunSpec base = RunSpec.of("sleep 30", Duration.ofMinutes(1));
        return new RunSpec(id, lease.attempt(), NODE, base.command(), null, null, base.env(), base.timeout(),
                base.maxOutputBytes(), base.limits());
    }
}
