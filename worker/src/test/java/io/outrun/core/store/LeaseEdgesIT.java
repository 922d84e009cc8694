package io.outrun.core.store;

import io.outrun.worker.lease.LeaseStore;
import com.zaxxer.hikari.HikariDataSource;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Review: edges of the lease fence and of the output it guards (each test states the bug it shows). */
class LeaseEdgesIT {

    private HikariDataSource pool;
    private SubmissionStore submissions;
    private LeaseStore leases;

    @BeforeEach
    void open() {
        pool = Database.pool(TestDatabase.fresh(DatabaseConfig::new), "review");
        Database.migrate(pool);
        submissions = new SubmissionStore(pool);
        leases = new LeaseStore(pool);
    }

    @AfterEach
    void close() {
        pool.close();
    }

    /**
     * Between a lease's expiry and its re-drive (the 3 s grace), finish() is accepted (its FENCE
     * does not look at the lease) but its last output is silently not written (the append is
     * fenced on expires_at > now()): an ended execution whose byte count says 11 and whose stored
     * output lacks the bytes.
     */
    @Test
    void finishInTheGraceEndsTheRunButDropsItsLastOutput() throws SQLException {
        UUID id = submissions.insert(Submission.of("o", "echo hello")).execution().id();
        Execution claimed = leases.claim(id, "n/1", Duration.ofSeconds(30)).orElseThrow();
        Lease lease = new Lease(id, claimed.leaseEpoch(), claimed.attempt(), claimed.leaseHolder());
        Rows.on(pool).expireLease(id, Duration.ofSeconds(1));
        byte[] out = "hello world".getBytes(StandardCharsets.UTF_8);
        OutputUpdate last = new OutputUpdate(lease, List.of(new Chunk(id, lease.epoch(), Chunk.STDOUT, 0, out)), 0, 0);
        boolean ended = leases.finish(lease, new Outcome(ExecutionStatus.SUCCEEDED, 0, null, null, last, out.length, 0)).written();
        Execution e = submissions.find(id).orElseThrow();
        System.out.printf("LEASE EDGE finish-in-grace: finish=%s status=%s stdout total=%d text='%s'%n",
                ended, e.status(), e.stdout().totalBytes(), e.stdout().text());
        // Either both land or neither does; here the end lands without its output.
        assertThat(ended ? e.stdout().text() : "hello world").isEqualTo("hello world");
    }

    /**
     * A drain-back decrements the attempt, so the next claim has the same attempt number and a new
     * epoch with new output. The output cursor names the attempt only (ExecutionRoutes.sinceCursor
     * accepts it when e.attempt() == cursor.attempt()), so a reader's cursor from the drained run
     * is applied to the new run's bytes: it never sees the new run's first bytes.
     */
    @Test
    void aDrainedRunAndItsRerunShareTheAttemptTheCursorNames() throws SQLException {
        UUID id = submissions.insert(Submission.of("o", "echo")).execution().id();
        Execution first = leases.claim(id, "n/1", Duration.ofSeconds(30)).orElseThrow();
        Lease l1 = new Lease(id, first.leaseEpoch(), first.attempt(), first.leaseHolder());
        append(l1, "first run: 20 bytes\n");
        // A reader's cursor after reading the first run: (attempt 1, stdout 20).
        int cursorAttempt = submissions.find(id).orElseThrow().attempt();
        long cursorStdout = submissions.find(id).orElseThrow().stdout().totalBytes();
        assertThat(leases.drainBack(l1)).map(Departed::status).contains(ExecutionStatus.QUEUED);

        Execution second = leases.claim(id, "n/2", Duration.ofSeconds(30)).orElseThrow();
        Lease l2 = new Lease(id, second.leaseEpoch(), second.attempt(), second.leaseHolder());
        append(l2, "second run starts here and goes on\n");
        Execution e = submissions.findOwned(id, "o", OutputStore.Read.since(cursorStdout, 0)).orElseThrow();
        System.out.printf("LEASE EDGE cursor: cursor attempt %d, now attempt %d epoch %d->%d; read since %d: '%s'%n",
                cursorAttempt, e.attempt(), first.leaseEpoch(), second.leaseEpoch(), cursorStdout,
                e.stdout().since(cursorStdout).text().strip());
        // Cursors name the output epoch, which the rerun does not share with the drained run.
        assertThat(e.outputEpoch()).as("the route must not take the old cursor as this run's").isNotEqualTo(first.leaseEpoch());
    }

    private void append(Lease lease, String text) throws SQLException {
        try (Connection c = pool.getConnection()) {
            OutputStore.append(c, lease.holder(), List.of(new OutputUpdate(lease,
                    List.of(new Chunk(lease.executionId(), lease.epoch(), Chunk.STDOUT, 0, text.getBytes(StandardCharsets.UTF_8))), 0, 0)));
        }
    }
}
