import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jobrunr.scheduling.Schedule;
import org.jobrunr.scheduling.ScheduleExpressionType;
import org.jobrunr.scheduling.interval.Interval;

/**
 * What the schedules did in a window, read from the database after it (issue 45): for every
 * schedule the firings it was due to make (JobRunr's own schedule maths), the executions each
 * firing made, and from those the missed, doubled and late ones. Works for both engines, told
 * apart per execution by the shape of its idempotency key:
 * <ul>
 * <li>JobRunr's recurring jobs (today, {@code worker.schedule.Firings}): {@code schedule-<firing job
 * id>}; the due time is the firing job's {@code scheduledAt}, kept in its SCHEDULED state in
 * {@code jobrunr_jobs.jobAsJson} (the {@code scheduledAt} column is cleared once it is enqueued);
 * <li>the engine of issue 45: {@code schedule-<recurring job id>-<due time, epoch ms>}.
 * </ul>
 */
final class ScheduleFirings {
    private ScheduleFirings() {
    }

    /** JobRunr's poll on every node (WorkerNode.JOBRUNR_POLL): how far ahead it schedules firings. */
    static final Duration POLL = Duration.ofSeconds(5);
    /** A firing due this close to the window's end may rightly not have fired yet. */
    static final Duration END_MARGIN = Duration.ofSeconds(5);
    /**
     * An execution's due time and an expected one are the same firing within this: JobRunr keeps
     * instants to the nanosecond, the new engine's key to the millisecond, and every period in
     * the mix is 10 s or more, so nothing else can be this close.
     */
    static final long MATCH_MS = 50;

    static final Pattern JOBRUNR_KEY = Pattern.compile("^schedule-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$");
    static final Pattern DUE_KEY = Pattern.compile("^schedule-(outrun-schedule-[0-9a-f]{24})-(\\d+)$");

    /** The schedules, with what their recurring job is anchored at (JobRunr: its createdAt). */
    static final String SCHEDULES = "SELECT s.owner, s.name, s.cron, s.every_ms, s.zone, s.created_at,"
            + " r.jobasjson::jsonb ->> 'createdAt', r.createdat, s.fired, s.skipped, s.recurring_job_id"
            + " FROM schedules s LEFT JOIN jobrunr_recurring_jobs r ON r.id = s.recurring_job_id";

    /** Every execution a schedule made, and for today's engine its firing job's due time. */
    static final String EXECUTIONS = "SELECT e.owner, e.labels ->> 'schedule', e.idempotency_key, e.created_at, e.finished_at,"
            + " (SELECT h ->> 'scheduledAt' FROM jsonb_array_elements(j.jobasjson::jsonb -> 'jobHistory') h"
            + "   WHERE h ->> 'state' = 'SCHEDULED' LIMIT 1)"
            + " FROM executions e LEFT JOIN jobrunr_jobs j ON e.idempotency_key ~ '^schedule-[0-9a-f]{8}-'"
            + "   AND j.id::text = substr(e.idempotency_key, 10)"
            + " WHERE e.labels ? 'schedule' AND e.idempotency_key LIKE 'schedule-%'";

    /** Today's engine: the firing jobs JobRunr made, due when, and whether Firings has ended them yet. */
    static final String FIRING_JOBS = "SELECT j.state,"
            + " (SELECT h ->> 'scheduledAt' FROM jsonb_array_elements(j.jobasjson::jsonb -> 'jobHistory') h"
            + "   WHERE h ->> 'state' = 'SCHEDULED' LIMIT 1)"
            + " FROM jobrunr_jobs j WHERE j.recurringjobid LIKE 'outrun-schedule-%'";

    /** {@code anchor}: JobRunr's (its recurring job's createdAt); {@code rowAnchor}: the schedule clock's (issue 45). */
    private record Sched(String owner, String name, Schedule schedule, ZoneId zone, Instant anchor, String anchoredAt,
                         Instant rowAnchor, String recurringJobId) {
    }

    /** An execution a firing made; {@code finished} null while it has not ended. */
    private record Made(long dueMs, Instant created, String engine, Instant finished) {
    }

    /**
     * Whether the schedule's latest execution due before {@code dueMs} had not ended by then: a
     * firing due meanwhile is rightly skipped by overlap skip (every schedule of the mix has it).
     * Judged from the executions' own times, not from what the engine says it skipped.
     */
    static boolean previousStillOn(NavigableMap<Long, List<Made>> mine, long dueMs) {
        Map.Entry<Long, List<Made>> before = mine.lowerEntry(dueMs - MATCH_MS);
        return before != null && before.getValue().stream()
                .anyMatch(m -> m.finished() == null || m.finished().toEpochMilli() > dueMs);
    }

    /**
     * The figures for firings due in [{@code from} + one poll, {@code to} − 5 s]: one poll after the
     * window opens (a firing due sooner may have been scheduled before the window, by a poll that
     * ran while the schedules were being made) and 5 s before it closes (one due later may rightly
     * not have fired yet; the harness also waits a little past {@code to} before reading).
     * Firings made: executions created in [from, to].
     */
    static Map<String, Object> measure(Connection db, Instant from, Instant to) throws SQLException {
        Instant lo = from.plus(POLL);
        Instant hi = to.minus(END_MARGIN);
        Map<String, Sched> schedules = new LinkedHashMap<>();
        Map<String, Long> anchors = new HashMap<>();
        long fired = 0;
        long skipped = 0;
        try (Statement st = db.createStatement(); ResultSet rs = st.executeQuery(SCHEDULES)) {
            while (rs.next()) {
                String cron = rs.getString(3);
                long everyMs = rs.getLong(4);
                Schedule schedule = cron != null ? ScheduleExpressionType.createScheduleFromString(cron)
                        : new Interval(Duration.ofMillis(everyMs));
                // JobRunr anchors an interval at its recurring job's createdAt (RecurringJob.getNextRun
                // calls schedule.next(createdAt, now, zone)); its JSON has it whole, the column in ms.
                Instant anchor;
                String anchoredAt;
                if (rs.getString(7) != null) {
                    anchor = instant(rs.getString(7));
                    anchoredAt = "recurring job JSON createdAt";
                } else if (rs.getLong(8) > 0) {
                    anchor = Instant.ofEpochMilli(rs.getLong(8));
                    anchoredAt = "recurring job createdAt column";
                } else {
                    anchor = rs.getTimestamp(6).toInstant();
                    anchoredAt = "schedules.created_at";
                }
                anchors.merge(anchoredAt, 1L, Long::sum);
                Sched s = new Sched(rs.getString(1), rs.getString(2), schedule, ZoneId.of(rs.getString(5)), anchor, anchoredAt,
                        rs.getTimestamp(6).toInstant(), rs.getString(11));
                schedules.put(key(s.owner(), s.name()), s);
                fired += rs.getLong(9);
                skipped += rs.getLong(10);
            }
        }

        Map<String, NavigableMap<Long, List<Made>>> made = new HashMap<>();
        Map<String, Long> engines = new LinkedHashMap<>();
        long madeInWindow = 0;
        long unknownDue = 0;
        try (Statement st = db.createStatement(); ResultSet rs = st.executeQuery(EXECUTIONS)) {
            while (rs.next()) {
                String idem = rs.getString(3);
                Instant created = rs.getTimestamp(4).toInstant();
                Instant finished = rs.getTimestamp(5) == null ? null : rs.getTimestamp(5).toInstant();
                if (!created.isBefore(from) && !created.isAfter(to)) {
                    madeInWindow++;
                }
                Long dueMs = null;
                String engine;
                Matcher m;
                if ((m = DUE_KEY.matcher(idem)).matches()) {
                    engine = "due-time key (issue 45)";
                    dueMs = Long.parseLong(m.group(2));
                } else if (JOBRUNR_KEY.matcher(idem).matches()) {
                    engine = "jobrunr recurring jobs";
                    String at = rs.getString(6);
                    if (at != null) {
                        dueMs = instant(at).toEpochMilli();
                    }
                } else {
                    engine = "unknown key shape";
                }
                engines.merge(engine, 1L, Long::sum);
                if (dueMs == null) {
                    unknownDue++; // its firing job is gone (or the key is of no known shape)
                    continue;
                }
                made.computeIfAbsent(key(rs.getString(1), rs.getString(2)), k -> new TreeMap<>())
                        .computeIfAbsent(dueMs, k -> new ArrayList<>()).add(new Made(dueMs, created, engine, finished));
            }
        }

        // The schedule clock reckons an interval from the schedule's own row (its created_at).
        boolean clock = engines.containsKey("due-time key (issue 45)");
        long expected = 0;
        long missed = 0;
        long skippedByOverlap = 0;
        long doubled = 0;
        long matchedMade = 0;
        List<Long> lateMs = new ArrayList<>();
        Map<String, Long> missedByKind = new TreeMap<>();
        for (Map.Entry<String, Sched> e : schedules.entrySet()) {
            Sched s = e.getValue();
            NavigableMap<Long, List<Made>> mine = made.getOrDefault(e.getKey(), new TreeMap<>());
            Instant anchor = clock ? s.rowAnchor() : s.anchor();
            for (Instant due = s.schedule().next(anchor, lo.minusNanos(1), s.zone()); !due.isAfter(hi);
                 due = s.schedule().next(anchor, due, s.zone())) {
                expected++;
                long dueMs = due.toEpochMilli();
                List<Made> hits = new ArrayList<>();
                mine.subMap(dueMs - MATCH_MS, true, dueMs + MATCH_MS, true).values().forEach(hits::addAll);
                matchedMade += hits.size();
                if (hits.isEmpty() && previousStillOn(mine, dueMs)) {
                    skippedByOverlap++; // overlap skip: the previous firing's execution had not ended
                    continue;
                }
                if (hits.isEmpty()) {
                    missed++;
                    missedByKind.merge(s.schedule().getExpression(), 1L, Long::sum);
                    continue;
                }
                if (hits.size() > 1) {
                    doubled++;
                }
                Instant first = hits.stream().map(Made::created).min(Instant::compareTo).orElseThrow();
                lateMs.add(Duration.between(due, first).toMillis());
            }
        }
        // Executions whose due time is in the measured range but matches no expected firing:
        // an extra firing, or maths here that is not the engine's (its anchor, say).
        long unexpected = 0;
        for (NavigableMap<Long, List<Made>> mine : made.values()) {
            for (List<Made> list : mine.subMap(lo.toEpochMilli(), true, hi.toEpochMilli(), true).values()) {
                unexpected += list.size();
            }
        }
        unexpected -= matchedMade;

        Map<String, Object> r = new LinkedHashMap<>();
        r.put("engine", engines.isEmpty() ? "none (no execution made by a schedule)"
                : engines.size() == 1 ? engines.keySet().iterator().next() : "mixed " + engines);
        r.put("executions_by_key_shape", engines);
        r.put("measured_from", lo.toString());
        r.put("measured_to", hi.toString());
        r.put("firings_expected", expected);
        r.put("firings_missed", missed);
        r.put("firings_skipped_by_overlap", skippedByOverlap);
        r.put("firings_doubled", doubled);
        r.put("firings_unexpected", Math.max(0, unexpected));
        r.put("late_p50_ms", Support.percentile(lateMs, 0.50));
        r.put("late_p99_ms", Support.percentile(lateMs, 0.99));
        r.put("late_max_ms", lateMs.stream().mapToLong(Long::longValue).max().orElse(-1));
        r.put("firings_made_in_window", madeInWindow);
        r.put("executions_without_due_time", unknownDue);
        r.put("missed_by_schedule", missedByKind);
        r.put("schedules_fired_total", fired);
        r.put("schedules_skipped_total", skipped);
        r.put("anchored_at", clock ? Map.of("schedules.created_at (the schedule clock's anchor)", (long) schedules.size()) : anchors);
        r.putAll(firingJobs(db, lo, hi));
        return r;
    }

    /**
     * Today's engine only: the firing jobs JobRunr made for due times in range, and how many of
     * them are not ended yet (not turned into executions): tells JobRunr's misses from Firings'.
     */
    private static Map<String, Object> firingJobs(Connection db, Instant lo, Instant hi) throws SQLException {
        long inRange = 0;
        long open = 0;
        try (Statement st = db.createStatement(); ResultSet rs = st.executeQuery(FIRING_JOBS)) {
            while (rs.next()) {
                if (rs.getString(2) == null) {
                    continue;
                }
                Instant due = instant(rs.getString(2));
                if (due.isBefore(lo) || due.isAfter(hi)) {
                    continue;
                }
                inRange++;
                String state = rs.getString(1);
                if (state.equals("SCHEDULED") || state.equals("ENQUEUED")) {
                    open++;
                }
            }
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("jobrunr_firing_jobs_in_range", inRange);
        r.put("jobrunr_firing_jobs_open_at_read", open);
        return r;
    }

    /** The database's clock now: the windows are compared with its timestamps. */
    static Instant now(Connection db) throws SQLException {
        try (PreparedStatement ps = db.prepareStatement("SELECT clock_timestamp()"); ResultSet rs = ps.executeQuery()) {
            rs.next();
            Timestamp t = rs.getTimestamp(1);
            return t.toInstant();
        }
    }

    /** An instant as JobRunr's JSON writes it: ISO-8601, or epoch seconds with a fraction. */
    static Instant instant(String text) {
        String t = text.strip();
        if (t.matches("-?\\d+(\\.\\d+)?")) {
            BigDecimal seconds = new BigDecimal(t);
            long whole = seconds.longValue();
            long nanos = seconds.subtract(BigDecimal.valueOf(whole)).movePointRight(9).longValue();
            return Instant.ofEpochSecond(whole, nanos);
        }
        return Instant.parse(t);
    }

    private static String key(String owner, String name) {
        return owner + "\n" + name;
    }
}
