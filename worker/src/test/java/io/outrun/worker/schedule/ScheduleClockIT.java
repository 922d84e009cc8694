package io.outrun.worker.schedule;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/**
 * Issue 45: Outrun's own clock of schedules, on a real database, driven by hand so that "no worker
 * ran for three periods" is exact: the clock is a {@link ScheduleClock} of this JVM whose passes
 * the test makes at chosen moments (a worker's clock makes them every tick). Each firing's due time
 * is read back from its execution's idempotency key.
 */
class ScheduleClockIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void afterThreeMissedPeriodsEachCatchUpPolicyFiresAsItSaysAndAPausedScheduleFiresNothing() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        try (Core core = Core.open(db, "api", OwnerLimits.DEFAULTS);
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "api")) {
            ApiCalls a = ApiCalls.on(api.port(), new TokenStore(core.pool()).create("alice").token());
            assertThat(a.post("/v1/schedules", "{\"name\": \"x\", \"everyMs\": 10000, \"catchUp\": \"some\","
                    + " \"submission\": {\"command\": \"true\"}}").body()).contains("invalid_request", "catchUp");
            assertThat(a.post("/v1/schedules", "{\"name\": \"x\", \"everyMs\": 10000, \"catchUpWindowMs\": 10,"
                    + " \"submission\": {\"command\": \"true\"}}").body()).contains("invalid_request", "catchUpWindowMs");
            assertThat(a.post("/v1/schedules/nothing/pause", "").statusCode()).isEqualTo(404);
            for (String policy : List.of("none", "one", "all")) {
                HttpResponse<String> made = a.post("/v1/schedules", "{\"name\": \"" + policy + "\", \"everyMs\": 10000,"
                        + " \"overlap\": \"queue\", \"catchUp\": \"" + policy + "\", \"submission\": {\"command\": \"true\"}}");
                assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
                assertThat(JSON.readTree(made.body()).get("catchUp").asText()).isEqualTo(policy);
            }
            assertThat(a.post("/v1/schedules", "{\"name\": \"paused\", \"everyMs\": 5000,"
                    + " \"submission\": {\"command\": \"true\"}}").statusCode()).isEqualTo(201);
            JsonNode paused = JSON.readTree(a.post("/v1/schedules/paused/pause", "").body());
            assertThat(paused.get("paused").asBoolean()).isTrue();
            assertThat(paused.hasNonNull("nextFireAt")).isFalse();
            Instant anchor = created(core, "all");

            ScheduleClock clock = new ScheduleClock(core.pool(), core.service(), core.books());
            // No clock for three periods and 7 s: 10, 20 and 30 s were missed, none of them on time.
            sleepUntil(anchor.plusSeconds(37));
            clock.pass();
            assertThat(dueTimes(core, "none")).as("none lets missed firings go").isEmpty();
            assertThat(dueTimes(core, "one")).as("one fires the latest, once").containsExactly(30_000L);
            assertThat(dueTimes(core, "all")).as("all fires each").containsExactly(10_000L, 20_000L, 30_000L);
            assertThat(dueTimes(core, "paused")).isEmpty();
            assertThat(rows.single("SELECT fired FROM schedules WHERE name = 'all'")).isEqualTo(3L);
            assertThat(rows.single("SELECT count(*) FROM jobrunr_jobs j JOIN schedules s ON s.recurring_job_id = j.recurringjobid"
                    + " WHERE s.name = 'all' AND j.state = 'SUCCEEDED'")).as("a job per firing on the dashboard").isEqualTo(3L);
            assertThat(rows.single("SELECT count(*) FROM jobrunr_recurring_jobs WHERE id LIKE 'outrun-schedule-%'")).isEqualTo(4L);

            // Resumed: from now on, nothing of what fell due while it was paused.
            JsonNode resumed = JSON.readTree(a.post("/v1/schedules/paused/resume", "").body());
            assertThat(resumed.get("paused").asBoolean()).isFalse();
            clock.pass();
            assertThat(dueTimes(core, "paused")).isEmpty();
            // On time again: every policy fires its 40 s firing.
            sleepUntil(anchor.plusSeconds(41));
            clock.pass();
            assertThat(dueTimes(core, "none")).containsExactly(40_000L);
            assertThat(dueTimes(core, "one")).containsExactly(30_000L, 40_000L);
            assertThat(dueTimes(core, "all")).containsExactly(10_000L, 20_000L, 30_000L, 40_000L);
            // Every 5 s from its creation: its 40 s firing is the first after its resume.
            assertThat(dueTimes(core, "paused")).containsExactly(40_000L);
            clock.pass();
            assertThat(rows.single("SELECT count(*) FROM executions WHERE labels->>'schedule' IS NOT NULL")).as("a pass again fires nothing twice")
                    .isEqualTo(1 + 2 + 4 + 1L);
        }
    }

    /**
     * Two clocks at once (a sweeper hand-over) over 300 due schedules of 3 owners: each firing
     * makes one execution, whichever pass took its schedule.
     */
    @Test
    void twoClocksAtOnceFireEachFiringOnce() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        try (Core api = Core.open(db, "api", OwnerLimits.DEFAULTS);
             Core other = Core.open(db, "other", OwnerLimits.DEFAULTS);
             ApiNode node = ApiNode.start(api, ApiConfig.defaults("127.0.0.1", 0), "api")) {
            for (String owner : List.of("a", "b", "c")) {
                ApiCalls calls = ApiCalls.on(node.port(), new TokenStore(api.pool()).create(owner).token());
                for (int i = 0; i < 100; i++) {
                    HttpResponse<String> made = calls.post("/v1/schedules", "{\"name\": \"s" + i + "\", \"cron\": \"*/5 * * * * *\","
                            + " \"overlap\": \"queue\", \"submission\": {\"command\": \"true\"}}");
                    assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
                }
            }
            ScheduleClock first = new ScheduleClock(api.pool(), api.service(), api.books());
            ScheduleClock second = new ScheduleClock(other.pool(), other.service(), other.books());
            // Their first look: each learns its next firing (those due while the others were made fire now).
            first.pass();
            long firings = rows.single("SELECT count(*) FROM executions");
            long from = rows.single("SELECT (extract(epoch FROM max(next_fire_at)) * 1000)::bigint FROM schedules");
            for (int round = 0; round < 2; round++) {
                Instant next = Instant.ofEpochMilli(rows.single("SELECT (extract(epoch FROM max(next_fire_at)) * 1000)::bigint FROM schedules"));
                sleepUntil(next.plusMillis(200));
                CountDownLatch go = new CountDownLatch(1);
                List<CompletableFuture<Integer>> passes = new ArrayList<>();
                for (ScheduleClock clock : List.of(first, second)) {
                    passes.add(CompletableFuture.supplyAsync(() -> {
                        try {
                            go.await();
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                        return clock.pass();
                    }));
                }
                go.countDown();
                int taken = passes.stream().mapToInt(CompletableFuture::join).sum();
                assertThat(taken).as("the two passes took each schedule once").isEqualTo(300);
                firings += 300;
                assertThat(rows.single("SELECT count(*) FROM executions")).isEqualTo(firings);
                assertThat(rows.single("SELECT count(DISTINCT (owner, idempotency_key)) FROM executions")).isEqualTo(firings);
            }
            assertThat(rows.single("SELECT sum(fired) FROM schedules")).isEqualTo(firings);
            assertThat(rows.single("SELECT count(*) FROM executions WHERE split_part(idempotency_key, '-', 5)::bigint >= ?"
                    + " AND created_at - to_timestamp(split_part(idempotency_key, '-', 5)::bigint / 1000.0) > interval '2 seconds'",
                    from)).as("the rounds' firings, each made within 2 s of its time").isZero();
        }
    }

    /** The schedule's creation: an interval's anchor. */
    private static Instant created(Core core, String name) throws Exception {
        try (Connection c = core.pool().getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT created_at FROM schedules WHERE name = ?")) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getTimestamp(1).toInstant();
            }
        }
    }

    /** The due times of a schedule's executions, in ms after its creation, from their keys, in order. */
    private static List<Long> dueTimes(Core core, String name) throws Exception {
        Instant anchor = created(core, name);
        List<Long> out = new ArrayList<>();
        try (Connection c = core.pool().getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT idempotency_key FROM executions WHERE labels->>'schedule' = ? ORDER BY idempotency_key")) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String key = rs.getString(1);
                    long due = Long.parseLong(key.substring(key.lastIndexOf('-') + 1));
                    out.add(due - anchor.toEpochMilli());
                }
            }
        }
        return out;
    }

    private static void sleepUntil(Instant t) throws InterruptedException {
        long ms = Duration.between(Instant.now(), t).toMillis();
        if (ms > 0) {
            Thread.sleep(ms);
        }
    }
}
