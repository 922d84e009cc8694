package io.outrun.core.schedule;

import io.outrun.core.books.Books;
import io.outrun.core.books.RecurringBook;
import io.outrun.core.execution.Submission;
import io.outrun.core.store.ScheduleStore;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.ZoneId;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * An owner's recurring schedules (issue 28): each is a row (what to run, checked once, when the
 * API took it, and since issue 45 when it next fires) and a JobRunr recurring job, which the
 * dashboard's Recurring Jobs page shows, written by {@link Books}, the one writer of JobRunr's
 * jobs. Outrun's clock ({@code worker.schedule.ScheduleClock}) fires them; JobRunr's server is
 * shown none of them ({@code core.books.JobRunrStorage#forServer}).
 */
public final class Schedules {

    /**
     * Every Outrun recurring job's id starts so; the rest is a hash of owner and name. The firings'
     * look ({@code core.store.ScheduleStore}) and its index ({@code core.books.JobRunrStorage}) match on it.
     */
    public static final String JOB_PREFIX = "outrun-schedule-";

    private final ScheduleStore store;
    private final Books books;

    public Schedules(ScheduleStore store, Books books) {
        this.store = store;
        this.books = books;
    }

    /** What a create did: the schedule, and whether it is new (false: the same one existed). */
    public record Created(ScheduleStore.Row row, boolean created) {
    }

    /** Why a create was refused. */
    public static final class Refused extends RuntimeException {
        public enum Why { EXISTS, TOO_MANY }

        private final Why why;

        Refused(Why why) {
            super(why.name(), null, false, false);
            this.why = why;
        }

        public Why why() {
            return why;
        }
    }

    /**
     * Creates the schedule {@code name} firing on {@code cron} or every {@code everyMs}, making up
     * for firings missed while no worker ran as {@code catchUp} says, within {@code catchUpWindowMs}.
     * A repeat of the very same schedule answers it; another one of that name is
     * {@link Refused.Why#EXISTS}.
     *
     * @throws IllegalArgumentException a cron expression or zone JobRunr cannot use (with why)
     */
    public Created create(String owner, String name, String cron, Long everyMs, ZoneId zone, String overlap,
                          CatchUp catchUp, long catchUpWindowMs, Submission submission) {
        String rid = JOB_PREFIX + hash(owner + "\n" + name);
        // JobRunr keeps labels under 45 characters; the job's name carries both whole.
        RecurringBook job = books.<ScheduleFiring>recurring(rid,
                "schedule " + name + " of " + owner + ": " + preview(submission.command()),
                List.of(label("owner:" + owner), label("schedule:" + name)), zone, cron, everyMs,
                f -> f.fire(owner, name));
        ScheduleStore.Row asked = new ScheduleStore.Row(owner, name, rid, cron, everyMs, zone.getId(), overlap,
                SubmissionJson.write(submission), null, null, null, 0, 0, catchUp.wire(), catchUpWindowMs, false, null);
        Optional<ScheduleStore.Row> made = store.insert(asked);
        if (made.isEmpty()) {
            Optional<ScheduleStore.Row> existing = store.get(owner, name);
            if (existing.isPresent()) {
                if (same(existing.get(), asked)) {
                    // Made again (JobRunr's save is an upsert): a create cut short between the row and
                    // its recurring job is completed by its repeat.
                    books.schedule(job);
                    return new Created(existing.get(), false);
                }
                throw new Refused(Refused.Why.EXISTS);
            }
            throw new Refused(Refused.Why.TOO_MANY);
        }
        try {
            books.schedule(job);
        } catch (RuntimeException e) {
            store.delete(owner, name); // JobRunr refused it (its cron check): nothing is left half made
            throw e;
        }
        return new Created(made.get(), true);
    }

    public List<ScheduleStore.Row> list(String owner) {
        return store.list(owner);
    }

    /**
     * Pauses ({@code paused}) or resumes a schedule: paused, it fires nothing; resumed, it fires
     * from now on (what fell due while it was paused is not caught up). Empty: no such schedule.
     */
    public Optional<ScheduleStore.Row> pause(String owner, String name, boolean paused) {
        return store.pause(owner, name, paused);
    }

    /**
     * Deletes the schedule and its recurring job: no firing after this runs anything (a firing in
     * progress holds the row; the delete waits for it, and its execution was made before).
     */
    public boolean delete(String owner, String name) {
        Optional<String> rid = store.delete(owner, name);
        rid.ifPresent(books::unschedule);
        return rid.isPresent();
    }

    private static String label(String text) {
        return text.length() < 45 ? text : text.substring(0, 43) + "…";
    }

    private static boolean same(ScheduleStore.Row a, ScheduleStore.Row b) {
        return Objects.equals(a.cron(), b.cron()) && Objects.equals(a.everyMs(), b.everyMs())
                && a.zone().equals(b.zone()) && a.overlap().equals(b.overlap())
                && a.catchUp().equals(b.catchUp()) && a.catchUpWindowMs() == b.catchUpWindowMs()
                && SubmissionJson.same(a.submissionJson(), b.submissionJson());
    }

    private static String preview(String command) {
        String line = command.strip().replaceAll("\\s+", " ");
        return line.length() <= 60 ? line : line.substring(0, 60) + "…";
    }

    private static String hash(String text) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(d, 0, 12);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
