package io.outrun.api.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.client.OutrunClient;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.OutputChunk;
import io.outrun.client.wire.SubmitRequest;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.worker.maintenance.RetentionStore;
import io.outrun.worker.node.WorkerConfig;
import io.outrun.worker.node.WorkerNode;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The API over real HTTP with a real worker running commands as host processes. */
class WorkerApiIT {

    private static ApiHarness api;
    private static WorkerNode worker;

    @BeforeAll
    static void start() {
        api = ApiHarness.start();
        worker = WorkerNode.start(api.core(), WorkerConfig.defaults("w-api-it"), new ProcessSandbox(), Limits.DEFAULTS);
    }

    @AfterAll
    static void stop() {
        worker.close();
        api.close();
    }

    static ExecutionView awaitState(OutrunClient client, String id, Predicate<ExecutionView> condition, Duration within) {
        long deadline = System.nanoTime() + within.toNanos();
        while (true) {
            ExecutionView v = client.get(id, 1000);
            if (condition.test(v)) {
                return v;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + within + "; last state " + v);
            }
        }
    }

    @Test
    void submitWithWaitAnswersTheResultWhenItEndsInTime() {
        ExecutionView v = api.alice().submit(SubmitRequest.of("echo out; echo err >&2; exit 7").withWaitMs(20_000L));
        assertThat(v.status()).isEqualTo("failed");
        assertThat(v.exitCode()).isEqualTo(7);
        assertThat(v.stdout().text()).isEqualTo("out\n");
        assertThat(v.stderr().text()).isEqualTo("err\n");
        assertThat(v.error().code()).isEqualTo("command_failed");
        assertThat(v.guidance()).contains("exited with code 7");
        assertThat(v.durationMs()).isNotNull();
        var raw = api.send("POST", "/v1/executions", api.aliceToken, "{\"command\": \"echo quick\", \"waitMs\": 20000}");
        assertThat(raw.statusCode()).isEqualTo(200);
        var slow = api.send("POST", "/v1/executions", api.aliceToken, "{\"command\": \"sleep 30\", \"waitMs\": 300}");
        assertThat(slow.statusCode()).isEqualTo(202);
    }

    @Test
    void waitForOutputAnswersAtTheFirstLineWithACursorPastIt() {
        long start = System.nanoTime();
        ExecutionView v = api.alice().submit(SubmitRequest.of("echo first; sleep 60; echo never")
                .withWaitMs(25_000L).withWaitFor("output"));
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        try {
            assertThat(v.status()).isEqualTo("running");
            assertThat(v.stdout().text()).isEqualTo("first\n");
            assertThat(waitedMs).as("answered at the first line, not at the end of the wait").isLessThan(15_000);
            OutputChunk next = api.alice().output(v.executionId(), v.cursor(), 0);
            assertThat(next.stdout().text()).as("the cursor is past what the answer showed").isEmpty();
        } finally {
            api.alice().cancel(v.executionId());
        }
    }

    @Test
    void aPollOfALongScriptThatPrintedThreeLinesIsSmall() {
        String script = "# " + "x".repeat(300_000) + "\necho one; echo two; echo three";
        ExecutionView v = api.alice().submit(SubmitRequest.of("true; " + script).withWaitMs(20_000L).withMaxAttempts(1));
        assertThat(v.status()).isEqualTo("succeeded");
        var poll = api.send("GET", "/v1/executions/" + v.executionId(), api.aliceToken, null);
        var status = api.send("GET", "/v1/executions/" + v.executionId() + "?output=none", api.aliceToken, null);
        var full = api.send("GET", "/v1/executions/" + v.executionId() + "?output=full", api.aliceToken, null);
        System.out.printf("poll of a 300 KB script that printed 3 lines: %,d bytes (output=none %,d; output=full %,d)%n",
                poll.body().getBytes(java.nio.charset.StandardCharsets.UTF_8).length,
                status.body().getBytes(java.nio.charset.StandardCharsets.UTF_8).length,
                full.body().getBytes(java.nio.charset.StandardCharsets.UTF_8).length);
        assertThat(poll.body()).contains("one\\ntwo\\nthree\\n");
        assertThat(poll.body().length()).isLessThan(2_000);
        assertThat(full.body().length()).isGreaterThan(300_000);
    }

    @Test
    void cursorReadsEveryByteOnceWhileTheCommandRuns() {
        String script = "for i in $(seq 1 400); do echo \"line $i\"; echo \"err $i\" >&2; sleep 0.01; done";
        String id = api.alice().submit(SubmitRequest.of(script)).executionId();
        StringBuilder out = new StringBuilder();
        StringBuilder err = new StringBuilder();
        int chunksWithText = 0;
        String cursor = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            OutputChunk chunk = api.alice().output(id, cursor, 10_000);
            assertThat(chunk.stdout().droppedBytes()).isZero();
            out.append(chunk.stdout().text());
            err.append(chunk.stderr().text());
            if (!chunk.stdout().text().isEmpty()) {
                chunksWithText++;
            }
            cursor = chunk.cursor();
            if (chunk.done()) {
                break;
            }
            assertThat(System.nanoTime()).isLessThan(deadline);
        }
        String expectedOut = IntStream.rangeClosed(1, 400).mapToObj(i -> "line " + i + "\n").collect(Collectors.joining());
        String expectedErr = IntStream.rangeClosed(1, 400).mapToObj(i -> "err " + i + "\n").collect(Collectors.joining());
        assertThat(out.toString()).isEqualTo(expectedOut);
        assertThat(err.toString()).isEqualTo(expectedErr);
        assertThat(chunksWithText).as("output arrived live, in several pieces").isGreaterThan(1);
        // Reading on from the last cursor gives nothing new.
        OutputChunk after = api.alice().output(id, cursor, 0);
        assertThat(after.stdout().text()).isEmpty();
        assertThat(after.done()).isTrue();
    }

    @Test
    void longPollAnswersAsSoonAsOutputArrives() {
        String id = api.alice().submit(SubmitRequest.of("sleep 2; echo ready; sleep 60")).executionId();
        try {
            OutputChunk first = api.alice().output(id, null, 0);
            long start = System.nanoTime();
            OutputChunk chunk = api.alice().output(id, first.cursor(), 25_000);
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            if (chunk.stdout().text().isEmpty()) {
                // The first poll may have been answered while queued; one more round at most.
                chunk = api.alice().output(id, chunk.cursor(), 25_000);
                waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            }
            assertThat(chunk.stdout().text()).isEqualTo("ready\n");
            assertThat(waitedMs).as("answered when the output came, not at the end of the wait").isLessThan(8_000);
            long quietStart = System.nanoTime();
            OutputChunk quiet = api.alice().output(id, chunk.cursor(), 2_000);
            assertThat(quiet.stdout().text()).isEmpty();
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - quietStart)).isBetween(1_900L, 6_000L);
        } finally {
            api.alice().cancel(id);
        }
    }

    @Test
    void cancelsARunningExecution() {
        String id = api.alice().submit(SubmitRequest.of("echo started; sleep 60")).executionId();
        awaitState(api.alice(), id, v -> v.status().equals("running") && v.stdout().totalBytes() > 0, Duration.ofSeconds(20));
        var raw = api.send("POST", "/v1/executions/" + id + "/cancel", api.aliceToken, null);
        assertThat(raw.statusCode()).isEqualTo(202);
        assertThat(raw.body()).contains("\"cancelRequested\":true");
        ExecutionView end = awaitState(api.alice(), id, ExecutionView::finished, Duration.ofSeconds(15));
        assertThat(end.status()).isEqualTo("cancelled");
        assertThat(end.stdout().text()).isEqualTo("started\n");
        var again = api.send("POST", "/v1/executions/" + id + "/cancel", api.aliceToken, null);
        assertThat(again.statusCode()).isEqualTo(200);
    }

    @Test
    void cancelOfAFinishedExecutionIsAConflict() {
        String id = api.alice().submit(SubmitRequest.of("true").withWaitMs(20_000L)).executionId();
        var raw = api.send("POST", "/v1/executions/" + id + "/cancel", api.aliceToken, null);
        assertThat(raw.statusCode()).isEqualTo(409);
        assertThat(raw.body()).contains("\"code\":\"execution_finished\"");
    }

    @Test
    void timeoutEndsAsTimedOutWithGuidance() {
        ExecutionView v = api.alice().submit(SubmitRequest.of("echo begin; sleep 30").withTimeoutMs(1000L).withWaitMs(20_000L));
        assertThat(v.status()).isEqualTo("timed_out");
        assertThat(v.stdout().text()).isEqualTo("begin\n");
        assertThat(v.guidance()).contains("timeoutMs");
    }

    @Test
    void truncatedOutputIsMarkedAndCursorCountsDroppedBytes() {
        ExecutionView v = api.alice().submit(SubmitRequest.of("seq 1 100000").withMaxOutputBytes(1000L).withWaitMs(20_000L));
        assertThat(v.status()).isEqualTo("succeeded");
        assertThat(v.stdout().truncated()).isTrue();
        assertThat(v.stdout().text()).startsWith("1\n2\n").contains("bytes of output dropped").endsWith("99999\n100000\n");
        assertThat(v.guidance()).contains("maxOutputBytes");
        OutputChunk all = api.alice().output(v.executionId(), null, 0);
        assertThat(all.stdout().droppedBytes()).isEqualTo(v.stdout().totalBytes() - 1000);
    }

    /** maxBytes pages: each page within its bound, contiguous, and joined they are the whole output, marker included. */
    @Test
    void pagesOfMaxBytesJoinToTheWholeOutput() {
        ExecutionView v = api.alice().submit(SubmitRequest.of("seq 1 60000; seq 1 9000 >&2").withMaxOutputBytes(200_000L)
                .withWaitMs(20_000L));
        assertThat(v.status()).isEqualTo("succeeded");
        OutputChunk whole = api.alice().output(v.executionId(), null, 0);
        assertThat(whole.more()).isFalse();
        assertThat(whole.stdout().droppedBytes()).as("a dropped middle to page across").isPositive();
        StringBuilder out = new StringBuilder();
        StringBuilder err = new StringBuilder();
        String cursor = null;
        int pages = 0;
        OutputChunk page;
        do {
            page = api.alice().output(v.executionId(), cursor, 0, 7_000);
            assertThat(page.stdout().text().replace(io.outrun.model.output.Captured.marker(page.stdout().droppedBytes()), ""))
                    .hasSizeLessThanOrEqualTo(7_000);
            assertThat(page.done()).isEqualTo(!page.more());
            out.append(page.stdout().text());
            err.append(page.stderr().text());
            cursor = page.cursor();
            pages++;
        } while (page.more());
        assertThat(pages).isGreaterThan(200_000 / 7_000);
        assertThat(out.toString()).isEqualTo(whole.stdout().text());
        assertThat(err.toString()).isEqualTo(whole.stderr().text());
        assertThat(page.cursor()).isEqualTo(whole.cursor());
        HttpResponse<String> tooSmall = api.send("GET", "/v1/executions/" + v.executionId() + "/output?maxBytes=15",
                api.aliceToken, null);
        assertThat(tooSmall.statusCode()).isEqualTo(400);
        assertThat(tooSmall.body()).contains("invalid_request").contains("maxBytes");
    }

    @Test
    void theCommandKnowsItsExecutionAttemptAndOwner() {
        ExecutionView v = api.alice().submit(SubmitRequest.of("echo \"$OUTRUN_EXECUTION_ID $OUTRUN_ATTEMPT $OUTRUN_OWNER\"")
                .withWaitMs(20_000L));
        assertThat(v.status()).isEqualTo("succeeded");
        assertThat(v.stdout().text()).isEqualTo(v.executionId() + " 1 alice\n");
    }

    @Test
    void prunedOutputSaysSoInItsGuidance() {
        ExecutionView v = api.alice().submit(SubmitRequest.of("echo soon gone").withWaitMs(20_000L));
        assertThat(v.status()).isEqualTo("succeeded");
        new RetentionStore(api.core().pool()).prune(Duration.ZERO, null, 1000);
        ExecutionView after = api.alice().get(v.executionId());
        assertThat(after.stdout().totalBytes()).isEqualTo("soon gone\n".length());
        assertThat(after.guidance()).contains("removed by retention").doesNotContain("maxOutputBytes");
    }

    @Test
    void cancelsAQueuedExecutionWhileTheOnlySlotIsBusy() {
        try (ApiHarness single = ApiHarness.start();
             WorkerNode oneSlot = WorkerNode.start(single.core(), WorkerConfig.defaults("w-one-slot").withSlots(1),
                     new ProcessSandbox(), Limits.DEFAULTS)) {
            OutrunClient alice = single.alice();
            String busy = alice.submit(SubmitRequest.of("sleep 60")).executionId();
            awaitState(alice, busy, v -> v.status().equals("running"), Duration.ofSeconds(20));
            String waiting = alice.submit(SubmitRequest.of("echo never")).executionId();
            assertThat(alice.get(waiting, 1500).status()).isEqualTo("queued");
            var raw = single.send("POST", "/v1/executions/" + waiting + "/cancel", single.aliceToken, null);
            assertThat(raw.statusCode()).isEqualTo(200);
            assertThat(alice.get(waiting).status()).isEqualTo("cancelled");
            alice.cancel(busy);
            assertThat(awaitState(alice, busy, ExecutionView::finished, Duration.ofSeconds(15)).status()).isEqualTo("cancelled");
            assertThat(alice.get(waiting).attempt()).as("never started").isZero();
        }
    }
}
