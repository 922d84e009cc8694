import io.outrun.core.store.ScheduleStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The schedules bench/schedules makes (issue 45): {@code n} schedules spread evenly over
 * {@code m} owners, half on a cron expression with seconds, half on an interval, all running
 * {@code true} with overlap skip (the default). The cron ones share their trigger times on
 * purpose (every one of them fires at second 0 of a minute, most at 0, 15, 30 and 45): the
 * worst case of a fleet's nightly jobs all set for midnight. The intervals are anchored at each
 * one's creation, so they spread over the seconds it took to make them.
 */
final class ScheduleMix {
    private ScheduleMix() {
    }

    /** One schedule to make: exactly one of {@code cron} and {@code everyMs}. */
    record Spec(String owner, String name, String cron, Long everyMs) {
        Map<String, Object> body() {
            return cron != null
                    ? Map.of("name", name, "cron", cron, "submission", Map.of("command", "true"))
                    : Map.of("name", name, "everyMs", everyMs, "submission", Map.of("command", "true"));
        }
    }

    /** Every period in the mix divides a minute: a window of whole minutes sees each fire a whole number of times. */
    static final List<String> CRONS = List.of("*/15 * * * * *", "0,30 * * * * *", "0 * * * * *", "*/20 * * * * *");
    static final List<Long> INTERVALS_MS = List.of(10_000L, 20_000L, 30_000L, 60_000L);
    /** The longest period in the mix: a "period" of --periods. */
    static final long LONGEST_PERIOD_MS = 60_000;

    static String owner(int i) {
        return String.format("sched-owner-%03d", i);
    }

    static List<Spec> of(int schedules, int owners) {
        if (owners > schedules) {
            throw new IllegalArgumentException("--owners (" + owners + ") must not exceed --schedules (" + schedules + ")");
        }
        int perOwner = (schedules + owners - 1) / owners;
        if (perOwner > ScheduleStore.MAX_PER_OWNER) {
            throw new IllegalArgumentException(schedules + " schedules over " + owners + " owners is " + perOwner
                    + " each; an owner keeps at most " + ScheduleStore.MAX_PER_OWNER + ": give more --owners");
        }
        List<Spec> specs = new ArrayList<>(schedules);
        int kinds = CRONS.size() + INTERVALS_MS.size();
        for (int i = 0; i < schedules; i++) {
            String owner = owner(i % owners);
            String name = String.format("s-%05d", i);
            int kind = i % kinds;
            specs.add(kind < CRONS.size() ? new Spec(owner, name, CRONS.get(kind), null)
                    : new Spec(owner, name, null, INTERVALS_MS.get(kind - CRONS.size())));
        }
        return specs;
    }

    /** Firings per second the mix asks for, on average (the cron ones and the intervals alike). */
    static double firingsPerSecond(int schedules) {
        double perKind = 0;
        for (long ms : List.of(15_000L, 30_000L, 60_000L, 20_000L)) {
            perKind += 1000.0 / ms;
        }
        for (long ms : INTERVALS_MS) {
            perKind += 1000.0 / ms;
        }
        return schedules * perKind / (CRONS.size() + INTERVALS_MS.size());
    }
}
