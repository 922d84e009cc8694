package io.outrun.worker.node;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.api.auth.TokenStore;
import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.core.owner.OwnerLimits;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.ApiCalls;
import io.outrun.worker.testing.WorkerProcess;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 28: recurring schedules through JobRunr's recurring jobs, on two real worker JVMs. A
 * 5-second schedule makes one execution per firing (labelled schedule=NAME, whatever the number
 * of nodes) and none after its deletion; one whose runs outlast its interval skips firings.
 */
class ScheduleIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void aScheduleFiresOncePerFiringOnTwoNodesAndNeverAfterItsDeletion() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        try (Core core = Core.open(db, "api", OwnerLimits.DEFAULTS);
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "api");
             WorkerProcess w1 = WorkerProcess.start(db, "sched-1", 2);
             WorkerProcess w2 = WorkerProcess.start(db, "sched-2", 2)) {
            String token = new TokenStore(core.pool()).create("alice").token();
            ApiCalls a = ApiCalls.on(api.port(), token);

            // Refusals, each naming its field.
            assertThat(a.post("/v1/schedules", "{\"name\": \"x\", \"submission\": {\"command\": \"true\"}}").body())
                    .contains("invalid_request", "cron");
            assertThat(a.post("/v1/schedules", "{\"name\": \"x\", \"everyMs\": 1000, \"submission\": {\"command\": \"true\"}}").body())
                    .contains("invalid_request", "everyMs");
            assertThat(a.post("/v1/schedules", "{\"name\": \"x\", \"cron\": \"not a cron\", \"submission\": {\"command\": \"true\"}}")
                    .body()).contains("invalid_request", "cron");
            assertThat(a.post("/v1/schedules", "{\"name\": \"x\", \"cron\": \"61 * * * *\", \"submission\": {\"command\": \"true\"}}")
                    .body()).contains("invalid_request", "cron");
            String longName = "n".repeat(64);
            assertThat(a.post("/v1/schedules", "{\"name\": \"" + longName + "\", \"cron\": \"0 3 * * *\", \"submission\":"
                    + " {\"command\": \"true\"}}").statusCode()).as("a 64-character name").isEqualTo(201);
            assertThat(a.delete("/v1/schedules/" + longName).statusCode()).isEqualTo(204);
            assertThat(a.post("/v1/schedules", "{\"name\": \"x\", \"everyMs\": 5000, \"submission\": {\"command\": \"\"}}").body())
                    .contains("invalid_request", "submission.command");
            assertThat(a.post("/v1/schedules", "{\"name\": \"x\", \"everyMs\": 5000, \"submission\": {\"command\": \"true\","
                    + " \"waitMs\": 100}}").body()).contains("invalid_request", "submission.waitMs");
            assertThat(a.post("/v1/schedules", "{\"name\": \"bad name!\", \"everyMs\": 5000, \"submission\": {\"command\": \"true\"}}")
                    .body()).contains("invalid_request", "name");

            String tick = "{\"name\": \"tick\", \"everyMs\": 5000, \"submission\": {\"command\": \"echo tick\","
                    + " \"labels\": {\"team\": \"data\"}, \"env\": {\"TZ\": \"UTC\"}}}";
            HttpResponse<String> made = a.post("/v1/schedules", tick);
            assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
            assertThat(a.post("/v1/schedules", tick).statusCode()).as("the same schedule again").isEqualTo(200);
            assertThat(a.post("/v1/schedules", tick.replace("echo tick", "echo tock")).body()).contains("schedule_exists");
            HttpResponse<String> slow = a.post("/v1/schedules", "{\"name\": \"slow\", \"everyMs\": 5000, \"overlap\": \"skip\","
                    + " \"submission\": {\"command\": \"sleep 12\"}}");
            assertThat(slow.statusCode()).as(slow.body()).isEqualTo(201);
            assertThat(rows.single("SELECT count(*) FROM jobrunr_recurring_jobs WHERE id LIKE 'outrun-schedule-%'"))
                    .as("on the dashboard's Recurring Jobs page").isEqualTo(2L);

            Await.until("four firings of tick", Duration.ofSeconds(60), () ->
                    rows.single("SELECT count(*) FROM executions WHERE labels->>'schedule' = 'tick'") >= 4 ? true : null);
            // One execution per firing: as many as firing jobs that fired, each once, ~5 s apart.
            JsonNode listed = JSON.readTree(a.read("/v1/executions?label=schedule=tick&limit=100"));
            assertThat(listed.get("executions")).isNotEmpty();
            assertThat(listed.get("executions").get(0).at("/labels/team").asText()).isEqualTo("data");
            long fired = rows.single("SELECT count(*) FROM executions WHERE labels->>'schedule' = 'tick'");
            long firingJobs = rows.single("SELECT count(*) FROM jobrunr_jobs j JOIN schedules s"
                    + " ON s.recurring_job_id = j.recurringjobid WHERE s.name = 'tick' AND j.state = 'SUCCEEDED'");
            assertThat(firingJobs).isBetween(fired, fired + 1); // one may be ended between the two reads
            assertThat(rows.single("SELECT count(*) FROM (SELECT created_at - lag(created_at) OVER (ORDER BY created_at) AS gap"
                    + " FROM executions WHERE labels->>'schedule' = 'tick') g WHERE gap < interval '3 seconds'"))
                    .as("no two executions of one firing").isEqualTo(0L);
            String done = Await.until("a tick that ran", Duration.ofSeconds(30), () -> {
                String b = a.read("/v1/executions?label=schedule=tick&status=succeeded&limit=1");
                return b.contains("\"executionId\"") ? b : null;
            });
            String id = JSON.readTree(done).at("/executions/0/executionId").asText();
            assertThat(a.read("/v1/executions/" + id)).contains("tick\\n");

            // Overlap skip: never two of "slow" queued or running at once, and firings were skipped.
            assertThat(rows.single("SELECT count(*) FROM executions WHERE labels->>'schedule' = 'slow'"
                    + " AND status IN ('queued', 'running')")).isLessThanOrEqualTo(1L);
            JsonNode list = JSON.readTree(a.read("/v1/schedules"));
            assertThat(list.get("schedules")).hasSize(2);
            JsonNode slowView = list.get("schedules").get(0);
            assertThat(slowView.get("name").asText()).isEqualTo("slow");
            assertThat(slowView.get("skipped").asLong()).isGreaterThanOrEqualTo(1);

            // Deleted: no firing after it runs anything.
            assertThat(a.delete("/v1/schedules/tick").statusCode()).isEqualTo(204);
            assertThat(a.delete("/v1/schedules/tick").statusCode()).isEqualTo(404);
            long atDelete = rows.single("SELECT count(*) FROM executions WHERE labels->>'schedule' = 'tick'");
            // Three intervals, checked all along: a firing made ahead of the delete must run nothing.
            long threeIntervals = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            Await.until("three intervals after the delete", Duration.ofSeconds(30), () -> {
                assertThat(rows.single("SELECT count(*) FROM executions WHERE labels->>'schedule' = 'tick'"))
                        .isEqualTo(atDelete);
                return System.nanoTime() - threeIntervals >= 0;
            });
            assertThat(rows.single("SELECT count(*) FROM jobrunr_recurring_jobs WHERE id LIKE 'outrun-schedule-%'"))
                    .isEqualTo(1L);
            assertThat(rows.single("SELECT count(*) FROM jobrunr_jobs j WHERE j.state IN ('ENQUEUED', 'SCHEDULED')"
                    + " AND j.recurringjobid LIKE 'outrun-schedule-%' AND j.recurringjobid NOT IN (SELECT recurring_job_id"
                    + " FROM schedules)")).as("the deleted schedule's firings were ended").isEqualTo(0L);
            List<String> names = JSON.readTree(a.read("/v1/schedules")).findValuesAsText("name");
            assertThat(names).containsExactly("slow");
        }
    }
}
