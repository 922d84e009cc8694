package io.outrun.worker.node;

import io.outrun.client.ApiException;
import io.outrun.client.OutrunClient;
import io.outrun.api.http.ApiHarness;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.OutputChunk;
import io.outrun.client.wire.StdinWritten;
import io.outrun.client.wire.SubmitRequest;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import io.outrun.worker.testing.WorkerProcess;
import java.time.Duration;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A command's stdin over HTTP, against a real API node, PostgreSQL and worker: a prompt answered
 * line by line, a terminal, every refusal, and a worker SIGKILLed mid-conversation whose next
 * attempt starts with everything written so far.
 */
class StdinIT {

    /** What the command printed from {@code cursor} on, until {@code text} shows or it ends. */
    static String readUntil(OutrunClient client, String id, String cursor, String text) throws InterruptedException {
        StringBuilder out = new StringBuilder();
        String[] at = {cursor};
        Await.until("\"" + text + "\" printed by " + id, Duration.ofSeconds(40), () -> {
            OutputChunk c = client.output(id, at[0], 2000);
            out.append(c.stdout().text());
            at[0] = c.cursor();
            return out.toString().contains(text) || c.done();
        });
        return out.toString();
    }

    /** The conversation every sandbox must hold, through the API. */
    static void converse(OutrunClient alice) throws InterruptedException {
        ExecutionView v = alice.submit(SubmitRequest.of("read a; echo got:$a; read b; echo got:$b; cat | od -An -c | tr -s ' ';"
                + " echo end").withStdin(true));
        String id = v.executionId();
        assertThat(v.stdin().mode()).isEqualTo("pipe");
        StdinWritten one = alice.writeStdin(id, "one\n", false);
        assertThat(one.written()).isEqualTo(4);
        assertThat(one.offset()).isZero();
        assertThat(one.guidance()).contains("/output?cursor=");
        assertThat(readUntil(alice, id, one.cursor(), "got:one")).contains("got:one").doesNotContain("got:two");
        StdinWritten two = alice.writeStdin(id, "two\n", false);
        assertThat(two.offset()).isEqualTo(4);
        assertThat(readUntil(alice, id, two.cursor(), "got:two")).isEqualTo("got:two\n");
        alice.writeStdin(id, new byte[] {'x', 0, (byte) 0xff, '\n'}, false);
        StdinWritten closed = alice.writeStdin(id, (String) null, true);
        assertThat(closed.stdin().closed()).isTrue();
        assertThat(closed.stdin().bytes()).isEqualTo(12);
        ExecutionView done = WorkerApiAwait.end(alice, id);
        assertThat(done.status()).as(done.toString()).isEqualTo("succeeded");
        assertThat(done.stdout().text()).isEqualTo("got:one\ngot:two\n x \\0 377 \\n\nend\n");
        assertThat(done.stdin().bytes()).isEqualTo(12);
        assertThat(done.stdin().closed()).isTrue();
        // Finished: nothing more is taken.
        assertThatThrownBy(() -> alice.writeStdin(id, "late\n", false)).isInstanceOfSatisfying(ApiException.class,
                e -> {
                    assertThat(e.httpStatus()).isEqualTo(409);
                    assertThat(e.code()).isEqualTo("execution_finished");
                });
    }

    /** A terminal: the command sees one, its input is echoed as a terminal does, and it ends at its own pace. */
    static void terminal(OutrunClient alice) throws InterruptedException {
        ExecutionView v = alice.submit(SubmitRequest.of("test -t 0 && echo stdin-is-a-tty; read a; echo got:$a").withTty(true));
        assertThat(v.stdin().mode()).isEqualTo("tty");
        alice.writeStdin(v.executionId(), "hello\n", false);
        ExecutionView done = WorkerApiAwait.end(alice, v.executionId());
        assertThat(done.status()).as(done.toString()).isEqualTo("succeeded");
        assertThat(done.stdout().text().replace("\r", "")).contains("stdin-is-a-tty\n").contains("got:hello\n");
    }

    @Test
    void aConversationOnHostProcesses() throws Exception {
        try (ApiHarness api = ApiHarness.start()) {
            WorkerNode worker = WorkerNode.start(api.core(), WorkerConfig.defaults("w-stdin"),
                    new ProcessSandbox().isolated(java.util.List.of()), Limits.DEFAULTS);
            try {
                converse(api.alice());
                terminal(api.alice());
                refusals(api);
            } finally {
                worker.close();
            }
        }
    }

    @Test
    void aConversationInDocker() throws Exception {
        Requirements.docker();
        try (ApiHarness api = ApiHarness.start();
             WorkerProcess w = WorkerProcess.startWith(api.core().config(), "docker-stdin", 2, "docker")) {
            converse(api.alice());
            terminal(api.alice());
        }
    }

    /** Every write that cannot be taken answers why, and nothing is written. */
    static void refusals(ApiHarness api) {
        OutrunClient alice = api.alice();
        ExecutionView plain = alice.submit(SubmitRequest.of("sleep 30"));
        assertThatThrownBy(() -> alice.writeStdin(plain.executionId(), "x\n", false)).isInstanceOfSatisfying(
                ApiException.class, e -> assertThat(e.code()).isEqualTo("stdin_not_open"));
        // Another owner's execution is not found, as ever.
        ExecutionView open = alice.submit(SubmitRequest.of("read a; sleep 30").withStdin(true));
        assertThatThrownBy(() -> api.bob().writeStdin(open.executionId(), "x\n", false)).isInstanceOfSatisfying(
                ApiException.class, e -> assertThat(e.code()).isEqualTo("execution_not_found"));
        alice.writeStdin(open.executionId(), "last\n", true);
        assertThatThrownBy(() -> alice.writeStdin(open.executionId(), "more\n", false)).isInstanceOfSatisfying(
                ApiException.class, e -> assertThat(e.code()).isEqualTo("stdin_closed"));
        String path = "/v1/executions/" + open.executionId() + "/stdin";
        assertThat(api.send("POST", path, api.aliceToken, "{}").body()).contains("nothing to write");
        assertThat(api.send("POST", path, api.aliceToken, "{\"text\":\"a\",\"data\":\"YQ==\"}").statusCode()).isEqualTo(400);
        assertThat(api.send("POST", path, api.aliceToken, "{\"data\":\"not base64!\"}").body()).contains("base64");
        assertThat(api.send("POST", path, api.aliceToken, "{\"txt\":\"a\"}").body()).contains("txt");
        assertThat(api.send("POST", "/v1/executions", api.aliceToken, "{\"command\":\"true\",\"stdin\":\"yes\"}").body())
                .contains("stdin: must be true or false");
        // A wait above the server's maximum is used at the maximum, and the answer says so.
        ExecutionView quick = alice.submit(SubmitRequest.of("true").withWaitMs(20_000L));
        var clamped = api.send("GET", "/v1/executions/" + quick.executionId() + "?waitMs=90000", api.aliceToken, null);
        assertThat(clamped.body()).contains("\"waitMsClamped\":30000");
        assertThat(api.send("GET", "/v1/executions/" + quick.executionId() + "?waitMs=30000", api.aliceToken, null).body())
                .doesNotContain("waitMsClamped");
        assertThat(api.send("GET", "/v1/executions/" + quick.executionId() + "/output?waitMs=99999",
                api.aliceToken, null).body()).contains("\"waitMsClamped\":30000");
        alice.cancel(plain.executionId());
        alice.cancel(open.executionId());
    }

    /**
     * A real worker JVM is SIGKILLed mid-conversation: the next attempt, on another worker, starts
     * with everything written so far, then takes what is written after.
     */
    @Test
    void aSigkilledWorkersNextAttemptStartsWithTheStdinWrittenSoFar() throws Exception {
        try (ApiHarness api = ApiHarness.start()) {
            OutrunClient alice = api.alice();
            String id;
            try (WorkerProcess a = WorkerProcess.start(api.core().config(), "stdin-a", 1)) {
                id = alice.submit(SubmitRequest.of("read a; echo \"got:$a on $OUTRUN_ATTEMPT\"; read b;"
                        + " echo \"got:$b on $OUTRUN_ATTEMPT\"").withStdin(true)).executionId();
                StdinWritten one = alice.writeStdin(id, "one\n", false);
                assertThat(readUntil(alice, id, one.cursor(), "got:one on 1")).contains("got:one on 1");
                a.kill();
            }
            try (WorkerProcess b = WorkerProcess.start(api.core().config(), "stdin-b", 1)) {
                ExecutionView second = Await.until("attempt 2 printed what was written before the kill", Duration.ofSeconds(60),
                        () -> {
                            ExecutionView v = alice.get(id);
                            return v.attempt() == 2 && v.stdout().text().contains("got:one on 2") ? v : null;
                        });
                assertThat(second.stdout().text()).isEqualTo("got:one on 2\n");
                alice.writeStdin(id, "two\n", true);
                ExecutionView done = WorkerApiAwait.end(alice, id);
                assertThat(done.status()).as(done.toString()).isEqualTo("succeeded");
                assertThat(done.attempt()).isEqualTo(2);
                assertThat(done.stdout().text()).isEqualTo("got:one on 2\ngot:two on 2\n");
            }
        }
    }

    /** Waits for the end through the API's own long poll. */
    static final class WorkerApiAwait {
        static ExecutionView end(OutrunClient client, String id) throws InterruptedException {
            return Await.until("the end of " + id, Duration.ofSeconds(60), () -> {
                ExecutionView v = client.get(id, 5000, "full");
                return v.finished() ? v : null;
            });
        }

        private WorkerApiAwait() {
        }
    }
}
