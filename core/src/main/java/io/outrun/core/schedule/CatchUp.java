package io.outrun.core.schedule;

import io.outrun.core.books.Books.ScheduleTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Which of a schedule's due firings the clock makes (issue 45). A firing is on time when the clock
 * finds it at most {@link #ON_TIME} after its time; older ones were missed (no worker ran, the
 * database was away, the schedule's node was being replaced) and are made as the schedule's
 * policy says, if they fell due within its window (older ones are let go):
 * <ul>
 * <li>{@code none}: missed firings are let go; only an on-time one fires;</li>
 * <li>{@code one} (the default): however many were missed, the latest due fires once;</li>
 * <li>{@code all}: every one fires, oldest first, at most {@link #MAX_ALL} per look.</li>
 * </ul>
 */
public enum CatchUp {
    NONE, ONE, ALL;

    /** How late a firing may be found and still be on time: well past the clock's one-second look. */
    public static final Duration ON_TIME = Duration.ofSeconds(5);
    /** Most firings of one schedule a look makes under {@code all}; the rest at the next look. */
    public static final int MAX_ALL = 100;
    /** Most firing times one look walks through (a one-second cron after a day away); it goes on at the next look. */
    static final int MAX_SCAN = 10_000;

    public String wire() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    public static CatchUp of(String wire) {
        return valueOf(wire.toUpperCase(java.util.Locale.ROOT));
    }

    /**
     * What to fire now, and where the schedule then stands: {@code firedThrough}, up to which
     * every firing time was handled, and {@code nextFireAt}, when the clock must look again.
     */
    public record Plan(List<Instant> fire, Instant firedThrough, Instant nextFireAt) {
    }

    /** The plan for a schedule whose firings up to {@code firedThrough} were handled, at {@code now}. */
    public Plan plan(ScheduleTime time, Instant firedThrough, Instant now, long windowMs) {
        Instant horizon = now.minusMillis(windowMs);
        Instant from = firedThrough.isBefore(horizon) ? horizon : firedThrough;
        List<Instant> fire = new ArrayList<>();
        Instant latest = null;
        Instant t = time.nextAfter(from);
        Instant before = from;
        int scanned = 0;
        while (!t.isAfter(now)) {
            if (this == ALL) {
                fire.add(t);
                if (fire.size() == MAX_ALL) {
                    return new Plan(fire, t, now); // more behind it: look again at once
                }
            } else {
                latest = t;
            }
            if (++scanned == MAX_SCAN) {
                // The rest of the walk at the next look: under none and one from before t, which
                // may be the latest due (the one they fire); all made t already.
                return new Plan(fire, this == ALL ? t : before, now);
            }
            before = t;
            t = time.nextAfter(t);
        }
        if (latest != null && (this == ONE || !latest.isBefore(now.minus(ON_TIME)))) {
            fire.add(latest);
        }
        return new Plan(fire, now, t);
    }
}
