package io.outrun.core.schedule;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.core.books.Books.ScheduleTime;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which firings the clock makes (issue 45), on an interval of 10 s from 12:00:00 and a cron with seconds. */
class CatchUpTest {

    private static final Instant CREATED = Instant.parse("2026-12-07T12:00:00Z");
    private static final ScheduleTime EVERY_10_S = ScheduleTime.of(null, 10_000L, CREATED, "UTC");
    private static final long DAY = 86_400_000L;

    private static Instant at(String hms) {
        return Instant.parse("2026-12-07T" + hms + "Z");
    }

    @Test
    void onTimeEveryPolicyFiresTheOneDueFiring() {
        for (CatchUp policy : CatchUp.values()) {
            CatchUp.Plan p = policy.plan(EVERY_10_S, at("12:00:05"), at("12:00:10.400"), DAY);
            assertThat(p.fire()).as(policy.wire()).containsExactly(at("12:00:10"));
            assertThat(p.firedThrough()).isEqualTo(at("12:00:10.400"));
            assertThat(p.nextFireAt()).isEqualTo(at("12:00:20"));
        }
    }

    @Test
    void notDueYetFiresNothingAndSaysWhenToLook() {
        CatchUp.Plan p = CatchUp.ONE.plan(EVERY_10_S, CREATED, at("12:00:03"), DAY);
        assertThat(p.fire()).isEmpty();
        assertThat(p.nextFireAt()).isEqualTo(at("12:00:10"));
    }

    @Test
    void afterThreeMissedPeriodsEachPolicyDoesWhatItSays() {
        // Handled through 12:00:05; no worker until 12:00:38: 10, 20 and 30 were missed.
        Instant now = at("12:00:38");
        assertThat(CatchUp.NONE.plan(EVERY_10_S, at("12:00:05"), now, DAY).fire()).isEmpty();
        assertThat(CatchUp.ONE.plan(EVERY_10_S, at("12:00:05"), now, DAY).fire()).containsExactly(at("12:00:30"));
        assertThat(CatchUp.ALL.plan(EVERY_10_S, at("12:00:05"), now, DAY).fire())
                .containsExactly(at("12:00:10"), at("12:00:20"), at("12:00:30"));
        for (CatchUp policy : CatchUp.values()) {
            assertThat(policy.plan(EVERY_10_S, at("12:00:05"), now, DAY).nextFireAt()).isEqualTo(at("12:00:40"));
        }
    }

    @Test
    void noneStillFiresTheLatestWhenItIsOnTime() {
        // Missed 10 and 20; 30 is found 2 s late, on time.
        assertThat(CatchUp.NONE.plan(EVERY_10_S, at("12:00:05"), at("12:00:32"), DAY).fire()).containsExactly(at("12:00:30"));
    }

    @Test
    void firingsOlderThanTheWindowAreLetGo() {
        // Away for an hour, a window of 25 s: only 12:59:40 .. 13:00:00 are within it.
        Instant now = at("13:00:03");
        assertThat(CatchUp.ALL.plan(EVERY_10_S, at("12:00:05"), now, 25_000).fire())
                .containsExactly(at("12:59:40"), at("12:59:50"), at("13:00:00"));
        assertThat(CatchUp.ONE.plan(EVERY_10_S, at("12:00:05"), at("13:00:09"), 5_000).fire()).isEmpty();
    }

    @Test
    void allFiresAtMostAHundredPerLookAndGoesOnFromThere() {
        Instant now = at("12:30:00.5"); // 180 firings due
        CatchUp.Plan first = CatchUp.ALL.plan(EVERY_10_S, CREATED, now, DAY);
        assertThat(first.fire()).hasSize(CatchUp.MAX_ALL);
        assertThat(first.firedThrough()).isEqualTo(at("12:16:40"));
        assertThat(first.nextFireAt()).as("looked at again at once").isEqualTo(now);
        CatchUp.Plan second = CatchUp.ALL.plan(EVERY_10_S, first.firedThrough(), now, DAY);
        assertThat(second.fire()).hasSize(80).startsWith(at("12:16:50")).endsWith(at("12:30:00"));
    }

    @Test
    void aCronWithSecondsInItsZone() {
        ScheduleTime cron = ScheduleTime.of("*/15 * * * * *", null, CREATED, "Europe/Paris");
        CatchUp.Plan p = CatchUp.ALL.plan(cron, at("12:00:01"), at("12:00:46"), DAY);
        assertThat(p.fire()).containsExactly(at("12:00:15"), at("12:00:30"), at("12:00:45"));
        assertThat(p.nextFireAt()).isEqualTo(at("12:01:00"));
        ScheduleTime daily = ScheduleTime.of("0 3 * * *", null, CREATED, "Europe/Paris");
        assertThat(CatchUp.ONE.plan(daily, at("12:00:00"), at("12:00:01"), DAY).nextFireAt())
                .as("03:00 in Paris is 02:00 UTC in December").isEqualTo(Instant.parse("2026-12-08T02:00:00Z"));
    }

    @Test
    void wireNames() {
        assertThat(List.of(CatchUp.values()).stream().map(CatchUp::wire)).containsExactly("none", "one", "all");
        assertThat(CatchUp.of("all")).isEqualTo(CatchUp.ALL);
    }
}
