package io.outrun.core.schedule;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.core.books.Books.ScheduleTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Review of issue 45: a walk cut at {@link CatchUp#MAX_SCAN} must not lose the firing that
 * {@code one} makes. When the scan limit falls on the last due time, the plan records it as
 * handled ({@code firedThrough}) without firing it, and the next look starts after it.
 */
class CatchUpScanLimitTest {

    private static final Instant FROM = Instant.parse("2026-12-07T00:00:00Z");
    private static final long DAY = 86_400_000L;

    @Test
    void oneFiresTheLatestMissedFiringEvenWhenTheScanLimitFallsOnIt() {
        ScheduleTime every5s = ScheduleTime.of("*/5 * * * * *", null, FROM, "UTC");
        // Exactly MAX_SCAN firings were missed; the last of them is the latest due.
        Instant latest = FROM.plusSeconds(5L * CatchUp.MAX_SCAN);
        Instant now = latest.plusMillis(500);
        List<Instant> fired = new ArrayList<>();
        Instant through = FROM;
        for (int look = 0; look < 3; look++) { // the clock's next looks, at once
            CatchUp.Plan p = CatchUp.ONE.plan(every5s, through, now.plusMillis(200L * look), DAY);
            fired.addAll(p.fire());
            through = p.firedThrough();
        }
        assertThat(fired).as("one: however many were missed, the latest due fires once").containsExactly(latest);
    }
}
