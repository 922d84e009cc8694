package io.outrun.worker.schedule;

import io.outrun.core.books.Books;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.owner.TooManyQueuedException;
import io.outrun.core.schedule.CatchUp;
import io.outrun.core.schedule.ScheduleFiring;
import io.outrun.core.books.Books.ScheduleTime;
import io.outrun.core.schedule.SubmissionJson;
import io.outrun.core.service.ExecutionService;
import io.outrun.core.service.Stored;
import io.outrun.core.store.ScheduleStore;
import io.outrun.core.store.StoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jobrunr.jobs.lambdas.IocJobLambda;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fleet's clock of schedules (issue 45), run by the sweeper node. It looks at the database when
 * the soonest schedule is due (and at least once a second: a new schedule's first look), then in
 * one transaction: takes the due schedules ({@code FOR UPDATE SKIP LOCKED}, so a second node's
 * pass at a sweeper hand-over takes others, and a delete waits for the pass), decides each one's
 * firings ({@link CatchUp}, overlap {@code skip}), writes their books (a JobRunr job per firing of
 * the schedule's recurring job), stores their executions in one batch and moves every schedule
 * forward in one statement.
 *
 * <p>Once each: a firing's execution is keyed {@code schedule-<recurring job id>-<due epoch ms>},
 * so a pass cut short after its submit (its node killed, the database gone before the commit) is
 * made again by the next pass with the same keys, and answers the same executions.
 */
public final class ScheduleClock {

    private static final Logger LOG = LoggerFactory.getLogger(ScheduleClock.class);

    /** How often the clock's thread asks whether it is time to look. */
    public static final Duration TICK = Duration.ofMillis(200);
    /** Longest the clock goes without looking at the database. */
    static final Duration MAX_SLEEP = Duration.ofSeconds(1);
    /** Schedules one pass takes. */
    static final int SCHEDULES_PER_PASS = 500;
    /** Firings one pass makes at most (one batch of submits); due schedules past it wait for the next pass. */
    static final int FIRINGS_PER_PASS = 1000;
    /** The label every fired execution carries: which schedule made it. */
    public static final String LABEL = "schedule";

    private final DataSource pool;
    private final ExecutionService service;
    private final Books books;
    private final ScheduleStore store;
    private long nextLook = System.nanoTime();

    public ScheduleClock(DataSource pool, ExecutionService service, Books books) {
        this.pool = pool;
        this.service = service;
        this.books = books;
        this.store = new ScheduleStore(pool);
    }

    /** One tick of the clock's thread: a look at the database when it is time, and the firings due. */
    public void tick() {
        long now = System.nanoTime();
        if (now - nextLook < 0) {
            return;
        }
        Long dueInMs = store.soonestDueInMs();
        if (dueInMs != null && dueInMs <= 0) {
            int taken = pass();
            LOG.debug("schedule clock: {} schedules due", taken);
            // Looked again at the next tick: more may be due behind a full pass, or soon after.
            nextLook = System.nanoTime();
            return;
        }
        long sleepMs = dueInMs == null ? MAX_SLEEP.toMillis() : Math.min(dueInMs, MAX_SLEEP.toMillis());
        nextLook = now + sleepMs * 1_000_000L;
    }

    /** One pass: the due schedules fired and moved forward, in one transaction. Returns how many it took. */
    int pass() {
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            try {
                ScheduleStore.boundPass(c);
                int taken = pass(c);
                c.commit();
                return taken;
            } catch (SQLException | RuntimeException e) {
                try {
                    c.rollback();
                } catch (SQLException ignored) {
                    // the connection is gone: its transaction with it
                }
                throw e;
            } finally {
                try {
                    c.setAutoCommit(true);
                } catch (SQLException ignored) {
                    // a broken connection: what broke the pass is what is thrown
                }
            }
        } catch (SQLException e) {
            throw new StoreException("cannot fire the due schedules", e);
        }
    }

    /** A firing to make: its schedule, when it was due, and the submission it runs. */
    private record Firing(ScheduleStore.Due schedule, Instant due, Submission submission, Move move) {
    }

    /** A firing's idempotency key: one execution per schedule and due time, whichever pass makes it. */
    static String key(ScheduleStore.Due d, Instant due) {
        return "schedule-" + d.recurringJobId() + "-" + due.toEpochMilli();
    }

    /** What the pass did to one schedule, filled in as it goes. */
    private static final class Move {
        final ScheduleStore.Due schedule;
        final CatchUp.Plan plan;
        UUID lastExecution;
        int fired;
        int skipped;

        Move(ScheduleStore.Due schedule, CatchUp.Plan plan) {
            this.schedule = schedule;
            this.plan = plan;
        }

        ScheduleStore.Advance advance() {
            return new ScheduleStore.Advance(schedule.owner(), schedule.name(), plan.nextFireAt(), plan.firedThrough(),
                    lastExecution, fired, skipped);
        }
    }

    private int pass(Connection c) throws SQLException {
        long t0 = System.nanoTime();
        List<ScheduleStore.Due> due = ScheduleStore.due(c, SCHEDULES_PER_PASS);
        long t1 = System.nanoTime();
        List<Move> moves = new ArrayList<>();
        List<Firing> firings = new ArrayList<>();
        List<Books.FiringBook> bookings = new ArrayList<>();
        for (ScheduleStore.Due d : due) {
            CatchUp.Plan plan;
            Submission submission;
            boolean busy;
            try {
                plan = CatchUp.of(d.catchUp()).plan(ScheduleTime.of(d.cron(), d.everyMs(), d.createdAt(), d.zone()),
                        d.firedThrough(), d.now(), d.catchUpWindowMs());
                submission = plan.fire().isEmpty() ? null : withLabel(SubmissionJson.read(d.submissionJson()), d.name());
                // Overlap skip: nothing fires while the previous firing's execution is queued or
                // running, nor a second firing of one catch-up.
                busy = d.overlap().equals("skip") && d.lastStatus() != null
                        && !ExecutionStatus.fromWire(d.lastStatus()).isTerminal();
            } catch (RuntimeException e) {
                // One schedule that cannot be reckoned (a zone a tzdata update dropped, a cron a newer
                // JobRunr refuses) must not stop the others: it is looked at again in a minute.
                LOG.error("schedule {} of {} cannot be reckoned; looked at again in a minute", d.name(), d.owner(), e);
                moves.add(new Move(d, new CatchUp.Plan(List.of(), d.firedThrough(), d.now().plusSeconds(60))));
                continue;
            }
            if (!firings.isEmpty() && firings.size() + plan.fire().size() > FIRINGS_PER_PASS) {
                break; // this one and the rest stay due: the next pass, at the next tick
            }
            Move move = new Move(d, plan);
            moves.add(move);
            if (plan.fire().isEmpty()) {
                continue;
            }
            // A skipped firing is counted on its schedule (and logged at debug), with no job of its
            // own: at fleet scale most firings of a backlog are skips, and a JobRunr job each cost
            // more than the firings themselves.
            for (Instant t : plan.fire()) {
                if (busy) {
                    move.skipped++;
                    LOG.debug("schedule {} of {}: firing due {} skipped, execution {} still {} (overlap: skip)", d.name(),
                            d.owner(), t, d.lastExecutionId(), d.lastStatus());
                    continue;
                }
                String key = key(d, t);
                firings.add(new Firing(d, t, submission.withIdempotencyKey(key), move));
                bookings.add(book(d, t, true, "fired: its execution has idempotency key " + key
                        + " and label schedule=" + d.name()));
                busy = d.overlap().equals("skip");
            }
        }
        long t2 = System.nanoTime();
        // The books first: a firing counted by its execution always has its job on the dashboard.
        books.firings(bookings);
        long t3 = System.nanoTime();
        List<Stored> stored = firings.isEmpty() ? List.of()
                : service.submitBatch(firings.stream().map(Firing::submission).toList(), null);
        long t4 = System.nanoTime();
        for (int i = 0; i < firings.size(); i++) {
            Firing f = firings.get(i);
            Move move = f.move();
            Stored s = stored.get(i);
            if (s.failure() == null) {
                move.fired++;
                move.lastExecution = s.inserted().execution().id();
                continue;
            }
            String why = s.failure() instanceof TooManyQueuedException full
                    ? "not run: the owner's queue is full (" + full.queued() + " queued)"
                    : "not run: its execution was refused (" + s.failure().getMessage() + ")";
            LOG.warn("schedule {} of {}: firing due {} {}", f.schedule().name(), f.schedule().owner(), f.due(), why);
            move.skipped++;
            books.firingRefused(book(f.schedule(), f.due(), true, why).jobId(), why);
        }
        ScheduleStore.advance(c, moves.stream().map(Move::advance).toList());
        long t5 = System.nanoTime();
        // A pass over a second makes firings late: say where its time went.
        if (t5 - t0 > 1_000_000_000L || LOG.isDebugEnabled()) {
            String what = String.format("schedule clock pass: %d schedules, %d firings, %d books in %d ms (look %d, plan %d,"
                    + " books %d, executions %d, move %d)", moves.size(), firings.size(), bookings.size(), ms(t5 - t0),
                    ms(t1 - t0), ms(t2 - t1), ms(t3 - t2), ms(t4 - t3), ms(t5 - t4));
            if (t5 - t0 > 1_000_000_000L) {
                LOG.info(what);
            } else {
                LOG.debug(what);
            }
        }
        return moves.size();
    }

    private static long ms(long nanos) {
        return nanos / 1_000_000L;
    }

    private static Submission withLabel(Submission base, String schedule) {
        Map<String, String> labels = new LinkedHashMap<>(base.labels());
        labels.put(LABEL, schedule);
        return base.withLabels(labels);
    }

    private static Books.FiringBook book(ScheduleStore.Due d, Instant due, boolean ran, String what) {
        String owner = d.owner();
        String name = d.name();
        IocJobLambda<ScheduleFiring> firing = f -> f.fire(owner, name);
        return new Books.FiringBook(d.recurringJobId(), "schedule " + name + " of " + owner,
                List.of(label("owner:" + owner), label("schedule:" + name)), due, ran, "due " + due + ": " + what, firing);
    }

    private static String label(String text) {
        return text.length() < 45 ? text : text.substring(0, 43) + "…";
    }

    /**
     * Firing jobs left ENQUEUED: JobRunr's own, made before an upgrade gave schedules this clock,
     * and an admin's Requeue of a firing on the dashboard. Ended DELETED: a firing is made by the
     * clock at its time, once, never by its job.
     */
    public void retireOlderFirings() {
        for (ScheduleStore.Firing f : store.enqueuedFirings(100)) {
            books.endFiring(f.jobId(), false, "not run: a schedule's firings are made by Outrun's clock at their time,"
                    + " never by their job (an older version's firing, or a requeue)");
        }
    }
}
