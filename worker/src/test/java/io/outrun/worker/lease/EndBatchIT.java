package io.outrun.worker.lease;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.owner.OwnerStore;
import io.outrun.core.store.Chunk;
import io.outrun.core.store.Database;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.core.store.Lease;
import io.outrun.core.store.Outcome;
import io.outrun.core.store.OutputUpdate;
import io.outrun.core.store.StoreException;
import io.outrun.core.store.SubmissionStore;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The ends of a node written together ({@link EndBatch}), against a real PostgreSQL: ends that
 * arrive while a write is in flight share the next statement (one transaction: one xmin), and
 * each is fenced on its own lease as a lone end is.
 */
class EndBatchIT {

    private static final Duration TTL = Duration.ofSeconds(30);

    private HikariDataSource pool;
    private SubmissionStore submissions;
    private LeaseStore leases;
    private ExecutorService threads;

    @BeforeEach
    void open() {
        pool = Database.pool(TestDatabase.fresh(DatabaseConfig::new), "ends");
        Database.migrate(pool);
        submissions = new SubmissionStore(pool);
        leases = new LeaseStore(pool);
        threads = Executors.newCachedThreadPool();
    }

    @AfterEach
    void close() {
        threads.shutdownNow();
        pool.close();
    }

    @Test
    void endsArrivingWhileOneIsWrittenShareTheNextStatement() throws Exception {
        Lease first = claim("alice");
        List<Lease> runs = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            runs.add(claim("alice"));
        }
        Map<Lease, Future<LeaseStore.Finish>> ends = new HashMap<>();
        try (Connection blocker = holdOwnersTable()) {
            Future<LeaseStore.Finish> lead = threads.submit(() -> leases.finish(first, ok(first, "first\n")));
            awaitStatementsWaitingOnALock(1);
            for (Lease run : runs) {
                ends.put(run, threads.submit(() -> leases.finish(run, ok(run, "out of " + run.executionId() + "\n"))));
            }
            awaitQueued(runs.size());
            blocker.commit();
            assertThat(lead.get(30, TimeUnit.SECONDS).written()).isTrue();
        }
        for (Lease run : runs) {
            assertThat(ends.get(run).get(30, TimeUnit.SECONDS).written()).isTrue();
            Execution row = submissions.find(run.executionId()).orElseThrow();
            assertThat(row.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
            assertThat(row.stdout().text()).as("each end's output on its own row").isEqualTo("out of " + run.executionId() + "\n");
        }
        assertThat(submissions.find(first.executionId()).orElseThrow().stdout().text()).isEqualTo("first\n");
        // Twelve ends, one transaction: the first end's write, then one for all that came meanwhile.
        assertThat(xmins(runs)).hasSize(1);
        assertThat(xmins(List.of(first))).doesNotContainAnyElementsOf(xmins(runs));
        assertThat(leases.endStatements()).isEqualTo(2);
        assertThat(leaseRows()).isZero();
    }

    @Test
    void aLostLeaseInABatchIsNotWrittenNorItsOutputAndTheOthersAre() throws Exception {
        Lease first = claim("alice");
        Lease good1 = claim("alice");
        Lease lost = claim("alice");
        Lease good2 = claim("alice");
        Rows.on(pool).expireLease(lost.executionId(), Duration.ofSeconds(1));
        Map<Lease, Future<LeaseStore.Finish>> ends = new HashMap<>();
        try (Connection blocker = holdOwnersTable()) {
            threads.submit(() -> leases.finish(first, ok(first, "first\n")));
            awaitStatementsWaitingOnALock(1);
            for (Lease run : List.of(good1, lost, good2)) {
                ends.put(run, threads.submit(() -> leases.finish(run, ok(run, "bytes of " + run.executionId()))));
            }
            awaitQueued(3);
            blocker.commit();
        }
        assertThat(ends.get(good1).get(30, TimeUnit.SECONDS).written()).isTrue();
        assertThat(ends.get(good2).get(30, TimeUnit.SECONDS).written()).isTrue();
        assertThat(ends.get(lost).get(30, TimeUnit.SECONDS).written()).as("its lease was lost").isFalse();
        assertThat(xmins(List.of(good1, good2))).as("written in one statement").hasSize(1);
        assertThat(leases.endStatements()).isEqualTo(2);

        Execution row = submissions.find(lost.executionId()).orElseThrow();
        assertThat(row.status()).isEqualTo(ExecutionStatus.RUNNING);
        assertThat(row.stdout().totalBytes()).isZero();
        assertThat(Rows.on(pool).single("SELECT count(*) FROM execution_output WHERE execution_id = ?", lost.executionId()))
                .as("the lost end's output did not land").isZero();
        for (Lease run : List.of(good1, good2)) {
            assertThat(submissions.find(run.executionId()).orElseThrow().stdout().text()).isEqualTo("bytes of " + run.executionId());
        }
    }

    @Test
    void eachEndSaysWhetherItsOwnerHasQueuedWorkItFrees() throws Exception {
        OwnerStore owners = new OwnerStore(pool);
        owners.set("capped", 1, null);
        Lease first = claim("free");
        Lease capped = claim("capped");
        Lease free = claim("free");
        submissions.insert(Submission.of("capped", "true")); // held back by the cap of 1
        submissions.insert(Submission.of("free", "true"));   // not held back: no cap
        Map<Lease, Future<LeaseStore.Finish>> ends = new HashMap<>();
        try (Connection blocker = holdOwnersTable()) {
            threads.submit(() -> leases.finish(first, ok(first, "")));
            awaitStatementsWaitingOnALock(1);
            for (Lease run : List.of(capped, free)) {
                ends.put(run, threads.submit(() -> leases.finish(run, ok(run, ""))));
            }
            awaitQueued(2);
            blocker.commit();
        }
        assertThat(ends.get(capped).get(30, TimeUnit.SECONDS)).isEqualTo(new LeaseStore.Finish(true, true));
        assertThat(ends.get(free).get(30, TimeUnit.SECONDS)).isEqualTo(new LeaseStore.Finish(true, false));
        assertThat(xmins(List.of(capped, free))).hasSize(1);
    }

    @Test
    void anEndWhoseRowAnotherWriteHoldsWaitsForItWhileTheOthersAreWritten() throws Exception {
        Lease held = claim("alice");
        Lease other = claim("alice");
        Future<LeaseStore.Finish> heldEnd;
        try (Connection holder = pool.getConnection()) {
            holder.setAutoCommit(false);
            try (Statement st = holder.createStatement()) {
                // As the heartbeat holds a lease row while it renews it.
                st.execute("SELECT 1 FROM leases WHERE execution_id = '" + held.executionId() + "' FOR UPDATE");
            }
            heldEnd = threads.submit(() -> leases.finish(held, ok(held, "held\n")));
            assertThat(leases.finish(other, ok(other, "other\n")).written()).isTrue();
            Thread.sleep(200);
            assertThat(heldEnd).as("busy: written again once the lock is gone").isNotDone();
            assertThat(submissions.find(held.executionId()).orElseThrow().status()).isEqualTo(ExecutionStatus.RUNNING);
            holder.commit();
        }
        assertThat(heldEnd.get(30, TimeUnit.SECONDS).written()).isTrue();
        assertThat(submissions.find(held.executionId()).orElseThrow().stdout().text()).isEqualTo("held\n");
    }

    @Test
    void theLastOutputDropsTailChunksThatFellOutAndRewritesAShorterChunk() throws Exception {
        Execution e = submissions.insert(Submission.of("alice", "yes").withMaxOutputBytes(8)).execution();
        Lease run = lease(leases.claim(e.id(), "n/1", TTL).orElseThrow());
        // Stored by earlier flushes: the head (0..4) and a tail chunk (4..8), then 8..9 cut short.
        try (Connection c = pool.getConnection()) {
            io.outrun.core.store.OutputStore.append(c, "n/1", List.of(new OutputUpdate(run, List.of(
                    chunk(run, 0, "head"), chunk(run, 4, "gone"), chunk(run, 8, "x")), 0, 0)));
        }
        // The end: 8..12 rewritten longer, 12..14 new; 4..8 fell out of the 4-byte tail.
        OutputUpdate last = new OutputUpdate(run, List.of(chunk(run, 8, "xyz1"), chunk(run, 12, "23")), 10, 0);
        assertThat(leases.finish(run, new Outcome(ExecutionStatus.SUCCEEDED, 0, null, null, last, 14, 0)).written()).isTrue();
        assertThat(offsets(run)).isEqualTo("0-4,8-12,12-14");
        String text = submissions.find(run.executionId()).orElseThrow().stdout().text();
        assertThat(text).startsWith("head").endsWith("z123");
    }

    @Test
    void aDatabaseFailureFailsEveryEndOfTheWriteEachWithItsOwnError() throws Exception {
        List<Lease> runs = List.of(claim("alice"), claim("alice"), claim("alice"));
        LeaseStore closed;
        HikariDataSource gone = Database.pool(TestDatabase.fresh(DatabaseConfig::new), "gone");
        gone.close();
        closed = new LeaseStore(gone);
        List<Future<LeaseStore.Finish>> ends = new ArrayList<>();
        for (Lease run : runs) {
            ends.add(threads.submit(() -> closed.finish(run, ok(run, "x"))));
        }
        for (int i = 0; i < runs.size(); i++) {
            UUID id = runs.get(i).executionId();
            Future<LeaseStore.Finish> end = ends.get(i);
            assertThatThrownBy(() -> end.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(StoreException.class)
                    .hasMessageContaining("cannot finish execution " + id);
        }
    }

    // --- helpers ---

    private Lease claim(String owner) {
        UUID id = submissions.insert(Submission.of(owner, "true")).execution().id();
        return lease(leases.claim(id, "n/1", TTL).orElseThrow());
    }

    private static Lease lease(Execution e) {
        return new Lease(e.id(), e.leaseEpoch(), e.attempt(), e.leaseHolder());
    }

    private static Chunk chunk(Lease run, long offset, String text) {
        return new Chunk(run.executionId(), run.epoch(), Chunk.STDOUT, offset, text.getBytes(StandardCharsets.UTF_8));
    }

    private static Outcome ok(Lease run, String stdout) {
        byte[] out = stdout.getBytes(StandardCharsets.UTF_8);
        OutputUpdate last = out.length == 0 ? null : new OutputUpdate(run, List.of(chunk(run, 0, stdout)), 0, 0);
        return new Outcome(ExecutionStatus.SUCCEEDED, 0, null, null, last, out.length, 0);
    }

    /**
     * Holds the {@code owners} table, which every end's statement reads: the first end's write
     * waits (before it locks any row) until the returned transaction commits, so the ends
     * started meanwhile queue behind it, deterministically.
     */
    private Connection holdOwnersTable() throws SQLException {
        Connection c = pool.getConnection();
        c.setAutoCommit(false);
        try (Statement st = c.createStatement()) {
            st.execute("LOCK TABLE owners IN ACCESS EXCLUSIVE MODE");
        }
        return c;
    }

    private void awaitStatementsWaitingOnALock(int n) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (Rows.on(pool).single("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'") < n) {
            assertThat(System.nanoTime()).as("a statement waits on the lock").isLessThan(until);
            Thread.sleep(10);
        }
    }

    /** Waits until {@code n} ends wait behind the write in flight (their threads parked in the batch). */
    private void awaitQueued(int n) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (Thread.getAllStackTraces().entrySet().stream()
                .filter(t -> t.getKey().getState() == Thread.State.WAITING)
                .filter(t -> Arrays.stream(t.getValue()).anyMatch(f -> f.getClassName().equals(EndBatch.class.getName())))
                .count() < n) {
            assertThat(System.nanoTime()).as(n + " ends queued").isLessThan(until);
            Thread.sleep(10);
        }
    }

    private Set<String> xmins(List<Lease> runs) throws SQLException {
        Set<String> xmins = new HashSet<>();
        try (Connection c = pool.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT xmin::text FROM executions WHERE id = ANY (?)")) {
            ps.setArray(1, c.createArrayOf("uuid", runs.stream().map(Lease::executionId).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    xmins.add(rs.getString(1));
                }
            }
        }
        return xmins;
    }

    private String offsets(Lease run) throws SQLException {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT string_agg(start_offset || '-' || end_offset, ',' ORDER BY start_offset) FROM execution_output"
                        + " WHERE execution_id = ?")) {
            ps.setObject(1, run.executionId());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    private long leaseRows() {
        return Rows.on(pool).single("SELECT count(*) FROM leases");
    }
}
