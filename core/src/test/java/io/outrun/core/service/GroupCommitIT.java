package io.outrun.core.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.core.execution.Submission;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.core.store.StoreException;
import io.outrun.core.store.SubmissionStore.Inserted;
import io.outrun.testing.Await;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Group commit on a real PostgreSQL: submits that arrive while a flush is in flight wait and go
 * together in the next one (one transaction: one xmin for all their rows), each answered only
 * once its row is committed; a row the database refuses fails only its own submit.
 */
class GroupCommitIT {

    private static Core core;
    private static DatabaseConfig db;
    private static Rows rows;

    @BeforeAll
    static void start() {
        db = TestDatabase.migrated(DatabaseConfig::new);
        core = Core.open(db, "group-commit-test");
        rows = Rows.on(core.pool());
    }

    @AfterAll
    static void stop() {
        core.close();
    }

    @Test
    void submitsArrivingDuringAFlushShareTheNextTransaction() throws Exception {
        GroupCommit group = new GroupCommit(core.submissions());
        ExecutorService threads = Executors.newFixedThreadPool(24);
        String blocker = "blocker-" + UUID.randomUUID();
        try (Connection hold = connect()) {
            // An uncommitted row with the leader's key: the leader's INSERT waits on it, so the
            // flush stays in flight while the followers arrive.
            hold.setAutoCommit(false);
            try (PreparedStatement ps = hold.prepareStatement("INSERT INTO executions (id, owner, command, timeout_ms,"
                    + " max_output_bytes, idempotency_key) VALUES (?, 'gc', 'held', 1000, 1024, ?)")) {
                ps.setObject(1, UUID.randomUUID());
                ps.setString(2, blocker);
                ps.executeUpdate();
            }
            Future<Inserted> leader = threads.submit(() -> group.insert(Submission.of("gc", "lead").withIdempotencyKey(blocker), null));
            Await.until("the leader waiting on the held key", Duration.ofSeconds(10), () -> rows.single("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type"
                    + " = 'Lock' AND query LIKE '%INSERT INTO executions%'") == 1);
            List<Future<Inserted>> followers = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                int n = i;
                followers.add(threads.submit(() -> group.insert(Submission.of("gc", "follow " + n), null)));
            }
            Await.until("20 followers queued", Duration.ofSeconds(10), () -> group.waiting() == 20);
            // Nobody is answered before its commit.
            assertThat(followers).noneMatch(Future::isDone);
            assertThat(leader.isDone()).isFalse();
            hold.rollback();

            assertThat(leader.get(10, TimeUnit.SECONDS).created()).isTrue();
            List<UUID> ids = new ArrayList<>();
            for (Future<Inserted> f : followers) {
                Inserted in = f.get(10, TimeUnit.SECONDS);
                assertThat(in.created()).isTrue();
                ids.add(in.execution().id());
            }
            // The 20 followers went in ONE transaction: one xmin; two flushes in all.
            String[] texts = ids.stream().map(UUID::toString).toArray(String[]::new);
            assertThat(rows.single("SELECT count(DISTINCT xmin::text) FROM executions WHERE id::text = ANY(?)",
                    (Object) texts)).isEqualTo(1);
            assertThat(rows.single("SELECT count(*) FROM executions WHERE id::text = ANY(?)", (Object) texts)).isEqualTo(20);
            assertThat(group.transactions()).isEqualTo(2);
        } finally {
            threads.shutdownNow();
        }
    }

    @Test
    void aRowTheDatabaseRefusesFailsOnlyItsOwnSubmit() throws Exception {
        GroupCommit group = new GroupCommit(core.submissions());
        ExecutorService threads = Executors.newFixedThreadPool(8);
        String blocker = "blocker-" + UUID.randomUUID();
        try (Connection hold = connect()) {
            hold.setAutoCommit(false);
            try (PreparedStatement ps = hold.prepareStatement("INSERT INTO executions (id, owner, command, timeout_ms,"
                    + " max_output_bytes, idempotency_key) VALUES (?, 'gc', 'held', 1000, 1024, ?)")) {
                ps.setObject(1, UUID.randomUUID());
                ps.setString(2, blocker);
                ps.executeUpdate();
            }
            Future<Inserted> leader = threads.submit(() -> group.insert(Submission.of("gc", "lead").withIdempotencyKey(blocker), null));
            Await.until("the leader waiting on the held key", Duration.ofSeconds(10), () -> rows.single("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type"
                    + " = 'Lock' AND query LIKE '%INSERT INTO executions%'") == 1);
            List<Future<Inserted>> good = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                int n = i;
                good.add(threads.submit(() -> group.insert(Submission.of("gc", "good " + n), null)));
            }
            // timeout_ms > 0 is a CHECK of the table: the parser never lets 0 through; the store does.
            Future<Inserted> bad = threads.submit(() -> group.insert(Submission.of("gc", "bad").withTimeoutMs(0), null));
            Await.until("4 followers queued", Duration.ofSeconds(10), () -> group.waiting() == 4);
            hold.commit(); // the leader's key now names the held row: its submit is an idempotent repeat

            Inserted repeat = leader.get(10, TimeUnit.SECONDS);
            assertThat(repeat.created()).isFalse();
            assertThat(repeat.execution().command()).isEqualTo("held");
            for (Future<Inserted> f : good) {
                assertThat(f.get(10, TimeUnit.SECONDS).created()).isTrue();
            }
            assertThat(bad).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(java.util.concurrent.ExecutionException.class)
                    .withCauseInstanceOf(StoreException.class);
            assertThat(rows.single("SELECT count(*) FROM executions WHERE command LIKE 'good %'")).isEqualTo(3);
            assertThat(rows.single("SELECT count(*) FROM executions WHERE command = 'bad'")).isZero();
        } finally {
            threads.shutdownNow();
        }
    }

    /**
     * A repeat's row is read after the INSERT; when that read fails, the new rows of the same
     * flush must not be committed already, or the retry one by one stores them a second time
     * (and each runs twice: the first rows are queued, unanswered and unbooked).
     */
    @Test
    void aFailedReadOfARepeatStoresNoRowTwice() throws Exception {
        String key = "repeat-" + UUID.randomUUID();
        String once = "once " + UUID.randomUUID();
        core.submissions().insert(Submission.of("gc", "first").withIdempotencyKey(key));
        ExecutorService threads = Executors.newFixedThreadPool(1);
        try (Connection hold = connect()) {
            // The repeat's read (its row's output offsets) waits on this lock; the INSERT does not.
            hold.setAutoCommit(false);
            hold.createStatement().execute("LOCK TABLE execution_output IN ACCESS EXCLUSIVE MODE");
            Future<List<Stored>> stored = threads.submit(() -> GroupCommit.storeEach(core.submissions(),
                    List.of(Submission.of("gc", "again").withIdempotencyKey(key), Submission.of("gc", once)),
                    java.util.Arrays.asList(null, null)));
            Await.until("the repeat's read waiting", Duration.ofSeconds(10), () -> rows.single("SELECT count(*) FROM"
                    + " pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT e.id%'") == 1);
            // The read fails (as under a statement timeout): not an outage, so each is stored again alone.
            rows.single("SELECT count(*) FROM (SELECT pg_cancel_backend(pid) FROM pg_stat_activity"
                    + " WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT e.id%') c");
            hold.rollback();
            List<Stored> out = stored.get(10, TimeUnit.SECONDS);
            assertThat(out.get(0).inserted().created()).isFalse();
            assertThat(out.get(1).inserted().created()).isTrue();
            assertThat(rows.single("SELECT count(*) FROM executions WHERE command = ?", once)).isEqualTo(1);
        } finally {
            threads.shutdownNow();
        }
    }

    @Test
    void aLoneSubmitFlushesAtOnce() {
        GroupCommit group = new GroupCommit(core.submissions());
        long start = System.nanoTime();
        Inserted in = group.insert(Submission.of("gc", "alone"), null);
        assertThat(in.created()).isTrue();
        assertThat(group.transactions()).isEqualTo(1);
        assertThat(group.waiting()).isZero();
        // No timer: far below any window a timed group commit would wait (generous for a busy CI machine).
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    }

    private static Connection connect() throws Exception {
        return DriverManager.getConnection(db.url(), db.user(), db.password());
    }
}
