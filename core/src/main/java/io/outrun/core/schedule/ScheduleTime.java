package io.outrun.core.schedule;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jobrunr.scheduling.Schedule;
import org.jobrunr.scheduling.ScheduleExpressionType;
import org.jobrunr.scheduling.interval.Interval;

/**
 * When a schedule fires (issue 45): JobRunr's own arithmetic, so that the dashboard's "next run"
 * of its recurring job and Outrun's clock agree. A cron expression (5 fields, or 6 with seconds
 * first) in the schedule's zone, or an interval counted from the schedule's creation.
 */
public final class ScheduleTime {

    private final Schedule schedule;
    private final Instant anchor;
    private final ZoneId zone;

    private ScheduleTime(Schedule schedule, Instant anchor, ZoneId zone) {
        this.schedule = schedule;
        this.anchor = anchor;
        this.zone = zone;
    }

    /**
     * Parsed expressions, shared: a fleet's schedules use few distinct ones, and the clock reckons
     * every due schedule at every pass. Bounded: past it, parsed again each time.
     */
    private static final Map<String, Schedule> PARSED = new ConcurrentHashMap<>();
    private static final int MAX_PARSED = 10_000;

    /** {@code cron} or, when null, every {@code everyMs} from {@code createdAt}. */
    public static ScheduleTime of(String cron, Long everyMs, Instant createdAt, String zone) {
        String expression = cron != null ? cron : "every " + everyMs;
        Schedule s = PARSED.get(expression);
        if (s == null) {
            s = cron != null ? ScheduleExpressionType.createScheduleFromString(cron) : new Interval(Duration.ofMillis(everyMs));
            if (PARSED.size() < MAX_PARSED) {
                PARSED.put(expression, s);
            }
        }
        return new ScheduleTime(s, createdAt, ZoneId.of(zone));
    }

    /** The first firing strictly after {@code after}. */
    public Instant nextAfter(Instant after) {
        Instant next = schedule.next(anchor, after, zone);
        // JobRunr answers strictly later; should a version not, a clock must still move on.
        return next.isAfter(after) ? next : schedule.next(anchor, after.plusMillis(1), zone);
    }
}
