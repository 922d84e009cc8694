package io.outrun.worker.node;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.api.http.FleetMetrics;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What an admin sees and does on the JobRunr dashboard, through the dashboard's own JSON API
 * against real worker JVMs: jobs end as their executions did, show what happened, and the
 * dashboard's buttons mean what they say.
 */
class DashboardTruthIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void jobsEndAsTheirExecutionsAndTheButtonsMeanWhatTheySay() throws Exception {
        Requirements.docker(); // the admin's delete must leave no container behind
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        int port = freePort();
        String base = "http://127.0.0.1:" + port;
        try (Core api = Core.open(db, "api");
             // No warm pool: the test counts each execution's containers by their execution label.
             WorkerProcess w = WorkerProcess.startWith(db, "dash-truth", 4, "docker", "--dashboard-port",
                     String.valueOf(port), "--dashboard-no-auth", "--pool-size", "0")) {
            UUID ok = submit(api, Submission.of("alice", "echo building; echo all good"));
            UUID failed = submit(api, Submission.of("bob", "echo compiling; echo 'make: *** [test] Error 3' >&2; exit 3"));
            UUID timedOut = submit(api, Submission.of("alice", "sleep 30").withTimeoutMs(1000));
            UUID cancelled = submit(api, Submission.of("bob", "sleep 60"));
            for (UUID id : List.of(ok, failed, timedOut)) {
                awaitEnd(api, id);
            }
            awaitRunning(api, cancelled);
            api.service().cancel(cancelled, "bob");
            awaitEnd(api, cancelled);

            // End states mirror the executions, with the error on the failed ones, one line each.
            JsonNode okJob = awaitJobState(base, api.submissions().find(ok).orElseThrow().jobId(), "SUCCEEDED");
            assertThat(logLines(okJob)).anyMatch(l -> l.contains("execution " + ok + " of alice"))
                    .anyMatch(l -> l.contains("succeeded · attempt 1 of 3 · node dash-truth · exit code 0"))
                    .anyMatch(l -> l.contains("all good"));
            // What the summary costs: written once, inside JobRunr's own final save of the job.
            int summaryBytes = okJob.path("metadata").toString().length();
            System.out.printf("DASHBOARD: succeeded job JSON %d bytes, of which the summary %d bytes (written once)%n",
                    okJob.toString().length(), summaryBytes);
            assertThat(summaryBytes).isLessThan(4096);
            JsonNode failedJob = awaitJobState(base, api.submissions().find(failed).orElseThrow().jobId(), "FAILED");
            JsonNode failure = last(failedJob);
            assertThat(failure.path("exceptionMessage").asText())
                    .isEqualTo("command_failed: The command exited with code 3; see stderr.");
            assertThat(failure.path("stackTrace").asText().strip()).isEqualTo(failure.path("exceptionMessage").asText())
                    .doesNotContain("\tat ");
            assertThat(logLines(failedJob)).anyMatch(l -> l.contains("exit code 3"))
                    .anyMatch(l -> l.contains("make: *** [test] Error 3"));
            JsonNode timedOutJob = awaitJobState(base, api.submissions().find(timedOut).orElseThrow().jobId(), "FAILED");
            assertThat(last(timedOutJob).path("exceptionMessage").asText()).startsWith("timed_out: The command ran past its timeout");
            JsonNode cancelledJob = awaitJobState(base, api.submissions().find(cancelled).orElseThrow().jobId(), "DELETED");
            assertThat(last(cancelledJob).path("reason").asText()).contains("Cancelled by its owner");

            // An admin deletes a running execution's job: the execution ends cancelled, on attempt 1, its container gone.
            UUID doomed = submit(api, Submission.of("carol", "echo started; sleep 120"));
            Await.until("the doomed command runs", Duration.ofSeconds(30),
                    () -> api.submissions().find(doomed).orElseThrow().stdout().text().contains("started"));
            assertThat(containers(doomed)).hasSize(1);
            // The admin sees it running: its node's books write PROCESSING within a second.
            awaitJobState(base, api.submissions().find(doomed).orElseThrow().jobId(), "PROCESSING");
            long deletedAt = System.nanoTime();
            assertThat(send("DELETE", base + "/api/jobs/" + api.submissions().find(doomed).orElseThrow().jobId()).statusCode())
                    .isEqualTo(204);
            Execution killed = awaitEnd(api, doomed);
            Duration took = Duration.ofNanos(System.nanoTime() - deletedAt);
            assertThat(killed.status()).isEqualTo(ExecutionStatus.CANCELLED);
            assertThat(killed.attempt()).isEqualTo(1);
            assertThat(killed.errorMessage()).contains("Cancelled by an admin from the dashboard");
            assertThat(took).as("the poll interval (5 s) and a kill").isLessThan(Duration.ofSeconds(15));
            Await.until("its container removed", Duration.ofSeconds(10), () -> containers(doomed).isEmpty());
            JsonNode doomedJob = getJob(base, killed.jobId());
            assertThat(doomedJob.path("jobHistory").findValuesAsText("state")).containsExactly("ENQUEUED", "PROCESSING", "DELETED");
            assertThat(w.log()).doesNotContain("IllegalJobStateChangeException").doesNotContain("SevereJobRunrException");

            // An admin deletes a queued execution's job: the sweep cancels the execution instead of dispatching it again.
            // (Queued behind a full node: its four slots hold four sleepers.)
            // (Each freed slot goes to the owner with the fewest running: erin's comes once dave's run.)
            List<UUID> fillers = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                fillers.add(submit(api, Submission.of("dave", "sleep 120")));
            }
            Await.until("fillers running", Duration.ofSeconds(30), () -> fillers.stream()
                    .allMatch(id -> api.submissions().find(id).orElseThrow().status() == ExecutionStatus.RUNNING));
            UUID waiting = submit(api, Submission.of("erin", "echo never"));
            assertThat(api.submissions().find(waiting).orElseThrow().status()).isEqualTo(ExecutionStatus.QUEUED);
            UUID waitingJob = api.submissions().find(waiting).orElseThrow().jobId();
            // Its book is written off the submit's path, within a moment: the admin sees it then.
            Await.until("its job on the dashboard", Duration.ofSeconds(5), () -> {
                try {
                    return api.storage().getJobById(waitingJob) != null;
                } catch (org.jobrunr.storage.JobNotFoundException notYet) {
                    return false;
                }
            });
            assertThat(send("DELETE", base + "/api/jobs/" + api.submissions().find(waiting).orElseThrow().jobId()).statusCode())
                    .isEqualTo(204);
            Execution dropped = Await.until("queued one cancelled", Duration.ofSeconds(40),
                    () -> api.submissions().find(waiting).filter(e -> e.status().isTerminal()).orElse(null));
            assertThat(dropped.status()).isEqualTo(ExecutionStatus.CANCELLED);
            assertThat(dropped.attempt()).isZero();
            assertThat(dropped.errorMessage()).contains("Cancelled by an admin from the dashboard");
            for (UUID id : fillers) {
                api.service().cancel(id, "dave");
            }
            for (UUID id : fillers) {
                awaitEnd(api, id);
            }

            // Requeueing a finished execution's job never runs it again: the job ends as before and says why.
            Execution before = api.submissions().find(failed).orElseThrow();
            int failedBefore = history(getJob(base, before.jobId())).size();
            assertThat(send("POST", base + "/api/jobs/" + before.jobId() + "/requeue").statusCode()).isEqualTo(204);
            JsonNode requeued = Await.until("requeued job ended again", Duration.ofSeconds(30), () -> {
                JsonNode j = getJob(base, before.jobId());
                return history(j).size() > failedBefore + 1 && j.path("jobHistory").get(history(j).size() - 1)
                        .path("state").asText().equals("FAILED") ? j : null;
            });
            assertThat(last(requeued).path("exceptionMessage").asText()).contains("submit the command anew");
            Execution after = api.submissions().find(failed).orElseThrow();
            assertThat(after.status()).isEqualTo(before.status());
            assertThat(after.attempt()).isEqualTo(before.attempt());
            assertThat(after.exitCode()).isEqualTo(before.exitCode());
            assertThat(after.finishedAt()).isEqualTo(before.finishedAt());
            assertThat(after.stdout().text()).isEqualTo(before.stdout().text());

            Execution okBefore = api.submissions().find(ok).orElseThrow();
            int okStates = history(getJob(base, okBefore.jobId())).size();
            assertThat(send("POST", base + "/api/jobs/" + okBefore.jobId() + "/requeue").statusCode()).isEqualTo(204);
            Await.until("requeued succeeded job ended again", Duration.ofSeconds(30), () -> {
                JsonNode j = getJob(base, okBefore.jobId());
                return history(j).size() > okStates + 1 && j.path("jobHistory").get(history(j).size() - 1)
                        .path("state").asText().equals("SUCCEEDED");
            });
            assertThat(api.submissions().find(ok).orElseThrow().finishedAt()).isEqualTo(okBefore.finishedAt());

            // The dashboard's counts agree with the API's metrics.
            String metrics = new FleetMetrics(api.pool()).scrape();
            long succeeded = ended(metrics, "succeeded");
            long failedOrTimedOut = ended(metrics, "failed") + ended(metrics, "timed_out");
            long cancelledCount = ended(metrics, "cancelled");
            assertThat(succeeded).isEqualTo(1);
            assertThat(failedOrTimedOut).isEqualTo(2);
            assertThat(total(base, "SUCCEEDED")).isEqualTo(succeeded);
            assertThat(total(base, "FAILED")).isEqualTo(failedOrTimedOut);
            assertThat(total(base, "DELETED")).isEqualTo(cancelledCount);
        }
    }

    @Test
    void aSigkilledWorkersAttemptFailsWithTheRedriveAndTheNextAttemptIsNamed() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        int port = freePort();
        String base = "http://127.0.0.1:" + port;
        try (Core api = Core.open(db, "api")) {
            UUID id = submit(api, Submission.of("alice", "echo attempt; sleep 120"));
            UUID firstJob;
            try (WorkerProcess a = WorkerProcess.startWith(db, "dash-a", 1, "process")) {
                awaitRunning(api, id);
                firstJob = api.submissions().find(id).orElseThrow().jobId();
                a.kill();
            }
            try (WorkerProcess b = WorkerProcess.startWith(db, "dash-b", 1, "process", "--dashboard-port",
                    String.valueOf(port), "--dashboard-no-auth")) {
                Execution second = Await.until("attempt 2 running on b", Duration.ofSeconds(60), () -> api.submissions().find(id)
                        .filter(e -> e.status() == ExecutionStatus.RUNNING && e.attempt() == 2).orElse(null));
                JsonNode lost = awaitJobState(base, firstJob, "FAILED");
                assertThat(last(lost).path("exceptionMessage").asText())
                        .startsWith("attempt 1 lost its lease")
                        .contains("re-driven as attempt 2 (JobRunr job " + second.jobId() + ")");
                // The claiming node's books record it off the dispatch path, within a write (a second).
                JsonNode next = awaitJobState(base, second.jobId(), "PROCESSING");
                assertThat(next.path("jobName").asText()).isEqualTo("[alice] echo attempt; sleep 120 · attempt 2");
                assertThat(last(next).path("state").asText()).isEqualTo("PROCESSING");
                api.service().cancel(id, "alice");
                awaitEnd(api, id);
                awaitJobState(base, second.jobId(), "DELETED");
            }
        }
    }

    // --- helpers ---------------------------------------------------------------------------

    private static UUID submit(Core api, Submission s) {
        return api.service().submit(s).execution().id();
    }

    private static Execution awaitEnd(Core api, UUID id) throws InterruptedException {
        return Await.until("end of " + id, Duration.ofSeconds(60),
                () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
    }

    private static void awaitRunning(Core api, UUID id) throws InterruptedException {
        Await.until("running " + id, Duration.ofSeconds(60),
                () -> api.submissions().find(id).orElseThrow().status() == ExecutionStatus.RUNNING);
    }

    private JsonNode awaitJobState(String base, UUID jobId, String state) throws InterruptedException {
        return Await.until("job " + jobId + " " + state, Duration.ofSeconds(30), () -> {
            JsonNode j = getJob(base, jobId);
            return j != null && last(j).path("state").asText().equals(state) ? j : null;
        });
    }

    private JsonNode getJob(String base, UUID jobId) {
        HttpResponse<String> r = send("GET", base + "/api/jobs/" + jobId);
        if (r.statusCode() != 200) {
            return null;
        }
        try {
            return JSON.readTree(r.body());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static List<JsonNode> history(JsonNode job) {
        List<JsonNode> states = new ArrayList<>();
        job.path("jobHistory").forEach(states::add);
        return states;
    }

    private static JsonNode last(JsonNode job) {
        List<JsonNode> h = history(job);
        return h.get(h.size() - 1);
    }

    /** Every line the job wrote to its dashboard logger. */
    private static List<String> logLines(JsonNode job) {
        List<String> lines = new ArrayList<>();
        job.path("metadata").fields().forEachRemaining(f -> {
            if (f.getKey().startsWith("jobRunrDashboardLog")) {
                f.getValue().path("logLines").forEach(l -> lines.add(l.path("logMessage").asText()));
            }
        });
        return lines;
    }

    private long total(String base, String state) throws IOException {
        HttpResponse<String> r = send("GET", base + "/api/jobs?state=" + state + "&offset=0&limit=1");
        return JSON.readTree(r.body()).path("total").asLong();
    }

    private static long ended(String metrics, String status) {
        Matcher m = Pattern.compile("^outrun_executions_ended_5m\\{status=\"" + status + "\"[^}]*} (\\S+)$", Pattern.MULTILINE)
                .matcher(metrics);
        return m.find() ? (long) Double.parseDouble(m.group(1)) : 0;
    }

    private HttpResponse<String> send(String method, String url) {
        HttpRequest request = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10))
                .method(method, HttpRequest.BodyPublishers.noBody()).build();
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Attempts of the execution's containers on this engine (running or not). */
    private static List<String> containers(UUID id) {
        try {
            Process p = new ProcessBuilder("docker", "ps", "-a", "--filter", "label=outrun.execution=" + id,
                    "--format", "{{.Label \"outrun.attempt\"}}").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            p.waitFor();
            return out.isEmpty() ? List.of() : List.of(out.split("\\s+"));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
