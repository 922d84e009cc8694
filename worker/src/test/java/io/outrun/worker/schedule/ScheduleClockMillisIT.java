package io.outrun.worker.schedule;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.api.auth.TokenStore;
import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.core.owner.OwnerLimits;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.ApiCalls;
import java.net.http.HttpResponse;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

/**
 * Review of issue 45, on a real database: an interval schedule is anchored at its row's
 * {@code created_at} (microseconds), so its firing times carry microseconds; the clock stores
 * {@code fired_through} through {@code to_timestamp(ms / 1000.0)}, which drops them. A
 * {@code catchUp: all} backlog cut at {@link io.outrun.core.schedule.CatchUp#MAX_ALL} stores the
 * last firing it made as its {@code fired_through}, truncated to just before that firing, and
 * the next pass fires it again (its idempotency key answers the first execution; the schedule's
 * {@code fired} counts it twice; with overlap skip it takes the one firing a catch-up may make).
 */
class ScheduleClockMillisIT {

    @Test
    void aCatchUpOfAllCutAtAHundredFiresNoFiringTwice() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        try (Core core = Core.open(db, "api", OwnerLimits.DEFAULTS);
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "api")) {
            ApiCalls a = ApiCalls.on(api.port(), new TokenStore(core.pool()).create("alice").token());
            HttpResponse<String> made = a.post("/v1/schedules", "{\"name\": \"all\", \"everyMs\": 5000, \"overlap\": \"queue\","
                    + " \"catchUp\": \"all\", \"submission\": {\"command\": \"true\"}}");
            assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
            // Made 1,000 s ago with no clock since (a fleet down for a quarter of an hour): 200 firings
            // due. The anchor keeps microseconds, as now() gives them; 123.456 ms past a second, for sure.
            rows.update("UPDATE schedules SET created_at = date_trunc('second', created_at) - interval '1000 seconds'"
                    + " + interval '123456 microseconds' WHERE name = 'all'");
            rows.update("UPDATE schedules SET fired_through = created_at, next_fire_at = now() WHERE name = 'all'");

            ScheduleClock clock = new ScheduleClock(core.pool(), core.service(), core.books());
            SoftAssertions soft = new SoftAssertions();
            clock.pass();
            soft.assertThat(rows.single("SELECT fired FROM schedules WHERE name = 'all'")).isEqualTo(100L);
            soft.assertThat(rows.single("SELECT count(*) FROM schedules WHERE name = 'all'"
                    + " AND fired_through < created_at + interval '500 seconds'"))
                    .as("fired_through is not before the 100th firing (created_at + 500 s), which the pass made").isZero();
            for (int i = 0; i < 4; i++) {
                clock.pass();
            }
            long executions = rows.single("SELECT count(*) FROM executions WHERE labels->>'schedule' = 'all'");
            soft.assertThat(executions).isGreaterThanOrEqualTo(200L);
            soft.assertThat(rows.single("SELECT fired FROM schedules WHERE name = 'all'"))
                    .as("each firing counted once: as many as its executions (" + executions + ")").isEqualTo(executions);
            soft.assertAll();
        }
    }
}
