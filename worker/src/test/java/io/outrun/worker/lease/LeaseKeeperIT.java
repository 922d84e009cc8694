package io.outrun.worker.lease;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.worker.metrics.NodeMetrics;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.core.store.Database;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.core.store.Lease;
import io.outrun.worker.lease.LeaseStore;
import io.outrun.core.store.RedriveStore;
import io.outrun.core.store.SubmissionStore;
import io.outrun.testing.Await;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import io.outrun.sandbox.Exit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The heartbeat, the watchdog and the killer of one node against a real PostgreSQL and real
 * processes: leases are held per claim (epoch), a run whose lease cannot be confirmed dies before
 * the sweep may re-drive it, and a kill is sent until it lands.
 */
class LeaseKeeperIT {

    private static final String NODE = "keeper-node";
    private static final String ME = NODE + "/test";
    private static final Duration TTL = Duration.ofSeconds(3);

    private HikariDataSource pool;
    private SubmissionStore submissions;
    private LeaseStore leases;
    private RedriveStore redrives;
    private LeaseKeeper keeper;
    private Path leaseDir;
    private final ProcessSandbox sandbox = new ProcessSandbox();
    private final List<Run> started = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        pool = Database.pool(db, "keeper-test");
        submissions = new SubmissionStore(pool);
        leases = new LeaseStore(pool);
        redrives = new RedriveStore(pool);
        leaseDir = Files.createTempDirectory("outrun-leases-");
        keeper = new LeaseKeeper(ME, NODE, "test", "outrun_wake_keeper", 4, TTL, leaseDir, new NodeMetrics(NODE));
    }

    @AfterEach
    void stop() {
        beaters.forEach(java.util.concurrent.ScheduledExecutorService::shutdownNow);
        started.forEach(Run::close); // kills what is still running
        keeper.close();
        sandbox.close();
        pool.close();
    }

    /**
     * Review: the lease file was formatted in the JVM's locale; under one whose digits are not
     * 0-9 (Arabic, Persian, …) the kill switch could not read the deadline and never fired.
     */
    @Test
    void theLeaseFileHoldsAsciiDigitsWhateverTheJvmsLocale() throws Exception {
        java.util.Locale before = java.util.Locale.getDefault();
        java.util.Locale.setDefault(java.util.Locale.forLanguageTag("ar-EG"));
        try {
            UUID id = submissions.insert(Submission.of("o", "true")).execution().id();
            Attempt attempt = begin(id);
            String text = Files.readString(keeper.leaseFile(attempt.lease()));
            assertThat(text).matches("[0-9]{12}\n");
            long deadline = Long.parseLong(text.strip());
            assertThat(deadline).isBetween(System.currentTimeMillis() / 1000, System.currentTimeMillis() / 1000 + TTL.toSeconds());
            keeper.end(attempt);
        } finally {
            java.util.Locale.setDefault(before);
        }
    }

    /**
     * Issue 25 (low): lease files left by SIGKILLed nodes of any deployment sharing the directory
     * are removed once untouched past the age; a live run's file, renewed meanwhile, stays. So
     * are pooled containers' API directories whose lease files are gone.
     */
    @Test
    void staleLeaseFilesAreRemovedAndALiveRunsFileStays() throws Exception {
        UUID id = submissions.insert(Submission.of("o", "true")).execution().id();
        Attempt live = begin(id);
        Path liveFile = keeper.leaseFile(live.lease());
        Path left = leaseDir.resolve(UUID.randomUUID() + ".3");
        Path pool = leaseDir.resolve("pool-" + UUID.randomUUID());
        for (Path file : List.of(left, pool)) {
            Files.writeString(file, "000000000001\n");
            Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis()
                    - LeaseKeeper.STALE_FILE_AGE.toMillis() - 60_000));
        }
        // A pooled container's API directory goes once its lease file is gone (with the run's
        // socket link in it); one whose lease file is still there (a pooled run renews it) stays.
        Path poolApi = Files.createDirectory(leaseDir.resolve(pool.getFileName() + ".api"));
        Files.writeString(poolApi.resolve("api.sock"), "a stand-in for the run's socket link");
        String taken = "pool-" + UUID.randomUUID();
        Path takenFile = Files.writeString(leaseDir.resolve(taken), "000000000001\n");
        Path takenApi = Files.createDirectory(leaseDir.resolve(taken + ".api"));
        for (Path dir : List.of(poolApi, takenApi)) {
            Files.setLastModifiedTime(dir, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis()
                    - LeaseKeeper.STALE_FILE_AGE.toMillis() - 60_000));
        }
        assertThat(keeper.pruneStaleFiles(LeaseKeeper.STALE_FILE_AGE)).isEqualTo(3);
        assertThat(left).doesNotExist();
        assertThat(pool).doesNotExist();
        assertThat(poolApi).doesNotExist();
        assertThat(takenFile).exists();
        assertThat(takenApi).isDirectory();
        assertThat(liveFile).exists();
        Files.delete(takenApi);
        Files.delete(takenFile);
        keeper.end(live);
    }

    @Test
    void twoClaimsOfOneExecutionOnOneNodeEachTouchOnlyTheirOwn() throws Exception {
        UUID id = submissions.insert(Submission.of("o", "sleep 30")).execution().id();
        Attempt first = begin(id);
        startRun(first, "sleep 30");

        // The first claim stalls past its lease and is re-driven; the second lands here too.
        expireAndRedrive(id);
        Attempt second = begin(id);
        assertThat(second.lease().epoch()).isGreaterThan(first.lease().epoch());
        startRun(second, "sleep 30");

        beat();
        assertThat(first.leaseLost()).as("the stale claim is lost").isTrue();
        assertThat(first.run().awaitExit(Duration.ofSeconds(5))).as("and its run killed by the watchdog").isPresent();
        keeper.end(first); // what the stale attempt's job does as it ends
        assertThat(keeper.isLive(id, second.lease().epoch())).as("the live claim is still tracked").isTrue();
        assertThat(keeper.isLive(id, first.lease().epoch())).isFalse();
        assertThat(second.leaseLost()).isFalse();
        assertThat(second.run().awaitExit(Duration.ofMillis(100))).as("the live claim still runs").isEmpty();
        assertThat(renewedSinceClaim(id)).as("the second claim's lease was renewed").isTrue();
    }

    @Test
    void aStartingClaimIsRenewedAndALostOneIsKilledOnceItsRunExists() throws Exception {
        UUID slow = submissions.insert(Submission.of("o", "sleep 30")).execution().id();
        Attempt starting = begin(slow);
        // A sandbox start that outlasts its lease by a whole ttl (a slow Docker engine): the beats keep it.
        // Beats every ttl/3, as the node's listener does, until the database's clock is two ttls past the claim.
        long[] nextBeat = {System.nanoTime()};
        Await.until("two ttls of beats since the claim", TTL.multipliedBy(4), () -> {
            if (System.nanoTime() - nextBeat[0] >= 0) {
                beatUnchecked();
                nextBeat[0] = System.nanoTime() + TTL.toNanos() / 3;
            }
            return Rows.on(pool).single("SELECT (now() > started_at + ? * interval '1 millisecond')::int FROM executions"
                    + " WHERE id = ?", TTL.toMillis() * 2, slow) == 1;
        });
        assertThat(redrives.redriveExpired(slow, 10)).as("nothing to re-drive: the lease was renewed").isEmpty();
        assertThat(starting.leaseLost()).isFalse();
        keeper.end(starting);

        // A lease lost while starting (re-driven elsewhere): once the run exists, it is killed.
        UUID lost = submissions.insert(Submission.of("o", "sleep 30")).execution().id();
        Attempt attempt = begin(lost);
        expireAndRedrive(lost);
        beat();
        assertThat(attempt.leaseLost()).isTrue();
        startRun(attempt, "sleep 30");
        assertThat(attempt.run().awaitExit(Duration.ofSeconds(5))).as("killed").isPresent();
    }

    @Test
    void withoutAConfirmedRenewalTheWatchdogKillsTheRunBeforeTheLeaseCanBeRedriven() throws Exception {
        UUID id = submissions.insert(Submission.of("o", "sleep 30")).execution().id();
        Attempt attempt = begin(id);
        startRun(attempt, "sleep 30");
        // No beat ever gets through (a hung database): the watchdog (or the run's own kill switch,
        // whichever fires first) ends the run, and the attempt is given up.
        Exit exit = attempt.run().awaitExit(TTL.multipliedBy(2)).orElseThrow(
                () -> new AssertionError("the run outlived its lease"));
        Await.until("given up", Duration.ofSeconds(2), attempt::leaseLost);
        assertThat(exit.exitCode()).isEqualTo(Exit.SIGKILL_EXIT);
        assertThat(redrives.redriveExpired(id, 10)).as("killed before its lease may be re-driven (expiry + grace)").isEmpty();
    }

    @Test
    void aKillThatFailsIsSentAgainUntilItLands() throws Exception {
        UUID id = submissions.insert(Submission.of("o", "sleep 30")).execution().id();
        Attempt attempt = begin(id);
        keepBeating(); // else the run's own kill switch (ttl 3 s) might end it first
        FlakyKill run = new FlakyKill(sandbox.start(spec(attempt.lease(), "sleep 30")), 2);
        started.add(run);
        keeper.started(attempt, run);
        keeper.cancel(id);
        Exit exit = run.awaitExit(Duration.ofSeconds(10)).orElseThrow(() -> new AssertionError("never killed"));
        assertThat(run.refused.get()).as("two refused kills before the one that landed").isEqualTo(2);
        assertThat(exit.killed()).isTrue();
    }

    @Test
    void aCommandThatEndsBeforeTheKillLandsKeepsItsRealExit() throws Exception {
        UUID id = submissions.insert(Submission.of("o", "sleep 2")).execution().id();
        Attempt attempt = begin(id);
        keepBeating();
        FlakyKill run = new FlakyKill(sandbox.start(spec(attempt.lease(), "sleep 2; exit 0")), Integer.MAX_VALUE);
        started.add(run);
        keeper.started(attempt, run);
        keeper.cancel(id);
        Exit exit = run.awaitExit(Duration.ofSeconds(10)).orElseThrow(() -> new AssertionError("did not end"));
        assertThat(run.refused.get()).as("the kill was tried and refused").isPositive();
        assertThat(exit.exitCode()).isZero();
        assertThat(exit.killed()).as("decided from how it ended, not from the kill sent").isFalse();
    }

    @Test
    void theRunsOwnKillSwitchEndsItWhenItsLeaseFileIsNoLongerRenewed() throws Exception {
        // The process sandbox's watchdog, without this JVM's help (as when the worker is paused).
        UUID id = UUID.randomUUID();
        Path file = leaseDir.resolve(id + ".1");
        Files.writeString(file, String.format("%012d%n", System.currentTimeMillis() / 1000 + 1));
        RunSpec spec = RunSpec.of("sleep 30", Duration.ofMinutes(1)).withLeaseFile(file);
        Run run = sandbox.start(spec);
        started.add(run);
        long t0 = System.nanoTime();
        Exit exit = run.awaitExit(Duration.ofSeconds(10)).orElseThrow(() -> new AssertionError("the kill switch did not fire"));
        assertThat(exit.exitCode()).isEqualTo(Exit.SIGKILL_EXIT);
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(9));
    }

    /** A real run whose first kills do not reach it: an engine that does not answer, as seen by the keeper. */
    private static final class FlakyKill implements Run {
        private final Run real;
        private final int refuse;
        final AtomicInteger refused = new AtomicInteger();

        FlakyKill(Run real, int refuse) {
            this.real = real;
            this.refuse = refuse;
        }

        @Override
        public boolean kill() {
            if (refused.get() < refuse) {
                refused.incrementAndGet();
                return false;
            }
            return real.kill();
        }

        @Override
        public io.outrun.model.output.Captured stdout() {
            return real.stdout();
        }

        @Override
        public io.outrun.model.output.Captured stderr() {
            return real.stderr();
        }

        @Override
        public io.outrun.sandbox.capture.BoundedCapture.Since keptSince(int stream, long from) {
            return real.keptSince(stream, from);
        }

        @Override
        public java.util.Optional<Exit> awaitExit(Duration wait) throws InterruptedException {
            return real.awaitExit(wait);
        }

        @Override
        public void close() {
            real.close();
        }
    }

    private Attempt begin(UUID id) {
        long sent = System.nanoTime();
        Execution e = leases.claim(id, ME, TTL).orElseThrow();
        return keeper.begin(e, sent);
    }

    private void startRun(Attempt attempt, String command) {
        Run run = sandbox.start(spec(attempt.lease(), command));
        started.add(run);
        keeper.started(attempt, run);
    }

    private void beatUnchecked() {
        try {
            beat();
        } catch (Exception e) {
            throw new IllegalStateException("the beat failed", e);
        }
    }

    private void beat() throws Exception {
        try (Connection c = pool.getConnection()) {
            keeper.beat(c);
        }
    }

    /** As if the lease ran out long ago. */
    private void expireAndRedrive(UUID id) throws Exception {
        assertThat(Rows.on(pool).expireLease(id, Duration.ofMinutes(1))).isEqualTo(1);
        assertThat(redrives.redriveExpired(id, 10)).hasSize(1);
        Await.until("queued again", Duration.ofSeconds(5), () -> submissions.find(id).orElseThrow().status() == ExecutionStatus.QUEUED);
    }

    private boolean renewedSinceClaim(UUID id) throws Exception {
        return Rows.on(pool).single("SELECT (l.renewed_at > e.started_at AND l.expires_at > now())::int FROM leases l"
                + " JOIN executions e ON e.id = l.execution_id WHERE l.execution_id = ?", id) == 1;
    }

    /** Beats every second while a test runs, so only the test's own subject can end a run. */
    private void keepBeating() {
        java.util.concurrent.ScheduledExecutorService beats = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
        beats.scheduleWithFixedDelay(() -> {
            try {
                beat();
            } catch (Exception e) {
                // the next beat tries again
            }
        }, 0, 1, java.util.concurrent.TimeUnit.SECONDS);
        beaters.add(beats);
    }

    private final List<java.util.concurrent.ScheduledExecutorService> beaters = new ArrayList<>();

    private RunSpec spec(Lease lease, String command) {
        RunSpec base = RunSpec.of(command, Duration.ofMinutes(1));
        return new RunSpec(lease.executionId(), lease.attempt(), lease.epoch(), NODE, ME, base.command(), null, null,
                base.env(), base.timeout(), base.maxOutputBytes(), base.limits(), keeper.leaseFile(lease));
    }
}
