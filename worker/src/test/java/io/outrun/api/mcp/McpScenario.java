package io.outrun.api.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.TextContent;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import io.outrun.client.wire.Json;
import io.outrun.worker.testing.WorkerProcess;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What issue 10 asks of Outrun's MCP tools, driven through a real MCP client against a live
 * Outrun (an API node and a worker JVM): the same scenario over stdio and streamable HTTP.
 */
final class McpScenario {

    private final McpSyncClient client;
    private final CommandProbe probe;

    /** Whether an execution's command still runs, as the sandbox in use shows it. */
    interface CommandProbe {
        /** {@code firstLine} is what the command printed first: {@code pid $$}. */
        boolean running(String executionId, String firstLine);
    }

    /** Host processes: the pid the command printed. */
    static final CommandProbe PROCESSES = (id, firstLine) -> {
        long pid = Long.parseLong(firstLine.strip().substring(4));
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    };

    McpScenario(McpSyncClient client, CommandProbe probe) {
        this.client = client;
        this.probe = probe;
    }

    /** A tool's answer: its JSON, and whether the protocol marked it an error. */
    record Answer(JsonNode json, boolean error) {
        String text(String field) {
            return json.path(field).asText();
        }
    }

    Answer call(String tool, Map<String, Object> args) {
        CallToolResult result = client.callTool(new CallToolRequest(tool, args));
        String text = ((TextContent) result.content().get(0)).text();
        // Guidance over MCP names tools and their arguments, never the HTTP API's routes.
        assertThat(text).as(tool + "'s answer names no HTTP route").doesNotContainPattern("(GET|POST|PUT|DELETE) /")
                .doesNotContain("/v1/");
        try {
            return new Answer(Json.mapper().readTree(text), Boolean.TRUE.equals(result.isError()));
        } catch (Exception e) {
            throw new AssertionError("not JSON: " + text, e);
        }
    }

    void listsTheTools() {
        List<String> names = client.listTools().tools().stream().map(Tool::name).toList();
        assertThat(names).containsExactlyInAnyOrder("run_command", "get_execution", "read_output", "cancel_execution",
                "list_executions", "list_artifacts", "read_artifact", "write_stdin");
        Tool run = client.listTools().tools().stream().filter(t -> t.name().equals("run_command")).findFirst().orElseThrow();
        assertThat(run.description()).contains("background=true").contains("maxAttempts=1");
    }

    /** A background run answers at once, then read_output with its cursor follows it to the end. */
    void backgroundRunPolledToItsOutput() {
        Answer started = call("run_command", Map.of("command", "echo one; sleep 1; echo two", "background", true,
                "labels", Map.of("suite", "mcp-it")));
        assertThat(started.error()).isFalse();
        assertThat(started.text("status")).isIn("queued", "running");
        assertThat(started.text("guidance")).contains("Do not wait idle").contains("read_output");
        String id = started.text("executionId");
        String cursor = started.text("cursor");
        StringBuilder out = new StringBuilder();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            Answer chunk = call("read_output", Map.of("executionId", id, "cursor", cursor, "waitMs", 10_000));
            assertThat(chunk.error()).as(chunk.json().toString()).isFalse();
            out.append(chunk.text("stdout"));
            cursor = chunk.text("cursor");
            if (chunk.json().path("done").asBoolean()) {
                assertThat(chunk.json().path("exitCode").asInt()).isZero();
                break;
            }
            assertThat(System.nanoTime()).as("ends in time").isLessThan(deadline);
        }
        assertThat(out.toString()).isEqualTo("one\ntwo\n");
        Answer end = call("get_execution", Map.of("executionId", id));
        assertThat(end.text("status")).isEqualTo("succeeded");
        assertThat(end.text("stdout")).isEqualTo("one\ntwo\n");
        Answer listed = call("list_executions", Map.of("labels", Map.of("suite", "mcp-it")));
        assertThat(listed.json().path("executions")).hasSize(1);
        assertThat(listed.json().path("executions").get(0).path("executionId").asText()).isEqualTo(id);
    }

    /** Input files in, a collected file and the whole of a long output read back with the artifact tools. */
    void filesInAndArtifactsOut() {
        Answer run = call("run_command", Map.of("command", "set -e; mkdir -p out; cat in/a.txt > out/r.txt; echo more >> out/r.txt;"
                        + " seq 1 300000",
                "files", java.util.List.of(Map.of("path", "in/a.txt", "content", "given\n")),
                "artifacts", java.util.List.of("out/*.txt"), "maxOutputBytes", 1000, "waitMs", 30_000));
        assertThat(run.error()).as(run.json().toString()).isFalse();
        String id = run.text("executionId");
        assertThat(call("get_execution", Map.of("executionId", id, "waitMs", 30_000)).text("status")).isEqualTo("succeeded");
        Answer list = call("list_artifacts", Map.of("executionId", id));
        assertThat(list.json().path("artifacts").findValuesAsText("name")).containsExactly("out/r.txt", "stdout");
        Answer read = call("read_artifact", Map.of("executionId", id, "name", "out/r.txt"));
        assertThat(read.text("text")).isEqualTo("given\nmore\n");
        assertThat(read.json().path("done").asBoolean()).isTrue();
        Answer part = call("read_artifact", Map.of("executionId", id, "name", "stdout", "offset", 6, "maxBytes", 8));
        assertThat(part.text("text")).isEqualTo("4\n5\n6\n7\n");
        assertThat(part.json().path("nextOffset").asLong()).isEqualTo(14);
    }

    /**
     * Nothing lost by cursor: a command printing 4,000 lines of 51 bytes over ~4 s, read live by
     * read_output's cursor, then a 3 MB burst read after its end, arrive byte-exact (SHA-256 equal
     * to what HTTP {@code /output} serves), each answer within its bound.
     */
    void readOutputPagesEveryByteByCursor(java.util.function.Function<String, String> httpStdout) {
        String x41 = "x".repeat(41);
        String live = "for i in $(seq 1 4000); do printf 'row %04d %s\\n' \"$i\" " + x41 + ";"
                + " [ $((i % 100)) = 0 ] && sleep 0.1; done; true";
        StringBuilder expected = new StringBuilder();
        for (int i = 1; i <= 4000; i++) {
            expected.append(String.format(java.util.Locale.ROOT, "row %04d %s\n", i, x41));
        }
        assertThat(expected.length()).isEqualTo(204_000);
        pageToTheEnd(call("run_command", Map.of("command", live, "background", true)), expected.toString(), httpStdout, true);

        String line = "0123456789".repeat(9) + "abcdefghi"; // 99 characters and a newline
        String burst = "yes " + line + " | head -n 30000; echo the error at the end >&2";
        Answer run = call("run_command", Map.of("command", burst, "maxOutputBytes", 4_000_000, "waitMs", 30_000));
        assertThat(run.text("status")).as("3 MB of yes ends within the 30 s wait").isEqualTo("succeeded");
        // Finished but longer than one answer: the end of stdout shown beside its first page.
        assertThat(run.text("stdoutTail")).hasSizeLessThanOrEqualTo(OutrunTools.TAIL_CHARS).endsWith(line + "\n");
        assertThat(run.json().has("stderrTail")).as("stderr fit in the page").isFalse();
        assertThat(run.text("stderr")).isEqualTo("the error at the end\n");
        assertThat(run.text("guidance")).contains("stdoutTail");
        pageToTheEnd(run, (line + "\n").repeat(30_000), httpStdout, false);
    }

    private void pageToTheEnd(Answer started, String expected, java.util.function.Function<String, String> httpStdout,
            boolean live) {
        assertThat(started.error()).as(started.json().toString()).isFalse();
        String id = started.text("executionId");
        StringBuilder out = new StringBuilder(started.text("stdout"));
        String cursor = started.text("cursor");
        boolean done = started.json().path("done").asBoolean();
        int answers = 0;
        int pages = started.json().path("more").asBoolean() ? 1 : 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!done) {
            Answer chunk = call("read_output", Map.of("executionId", id, "cursor", cursor, "waitMs", 10_000));
            assertThat(chunk.error()).as(chunk.json().toString()).isFalse();
            String text = chunk.text("stdout");
            assertThat(text.getBytes(java.nio.charset.StandardCharsets.UTF_8).length).as("one answer's bound")
                    .isLessThanOrEqualTo(OutrunTools.TEXT_LIMIT);
            if (chunk.json().path("more").asBoolean()) {
                pages++;
                assertThat(chunk.text("guidance")).contains("read_output").contains("no byte is skipped");
            }
            out.append(text);
            cursor = chunk.text("cursor");
            done = chunk.json().path("done").asBoolean();
            answers++;
            assertThat(System.nanoTime()).as("ends in time").isLessThan(deadline);
        }
        assertThat(out.length()).as("characters read by cursor").isEqualTo(expected.length());
        assertThat(sha256(out.toString())).as("byte-exact").isEqualTo(sha256(expected));
        assertThat(sha256(httpStdout.apply(id))).as("as HTTP /output serves it").isEqualTo(sha256(expected));
        // 3,000,000 bytes in answers of 30,000: the run's own answer and 99 pages of read_output.
        assertThat(answers).as("read in many answers").isGreaterThanOrEqualTo(live ? 6 : 99);
        if (!live) {
            assertThat(pages).as("answers that stopped at their bound").isGreaterThanOrEqualTo(99);
        }
    }

    private static String sha256(String text) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
                    .digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Two run_command calls with one idempotencyKey answer one execution; the command ran once. */
    void anIdempotencyKeyRunsTheCommandOnce() {
        String key = "mcp-deploy-" + System.nanoTime();
        Map<String, Object> args = Map.of("command", "echo deployed", "idempotencyKey", key, "waitMs", 25_000);
        Answer first = call("run_command", args);
        Answer again = call("run_command", args);
        assertThat(first.error()).as(first.json().toString()).isFalse();
        assertThat(again.error()).as(again.json().toString()).isFalse();
        assertThat(again.text("executionId")).isEqualTo(first.text("executionId"));
        assertThat(again.text("status")).isEqualTo("succeeded");
        assertThat(again.json().path("attempt").asInt()).isEqualTo(1);
        assertThat(again.text("stdout")).isEqualTo("deployed\n");
        Answer other = call("run_command", Map.of("command", "echo something else", "idempotencyKey", key));
        assertThat(other.error()).as("the same key for another command").isTrue();
        assertThat(other.json().path("error").path("code").asText()).isEqualTo("idempotency_key_reused");
        Tool run = client.listTools().tools().stream().filter(t -> t.name().equals("run_command")).findFirst().orElseThrow();
        assertThat(run.description()).contains("idempotencyKey");
    }

    void foregroundRunAnswersInOneCall() {
        Answer done = call("run_command", Map.of("command", "echo hi; echo oops >&2; exit 3", "waitMs", 25_000));
        assertThat(done.error()).as("a failed command is a result, not a tool error").isFalse();
        assertThat(done.text("status")).isEqualTo("failed");
        assertThat(done.json().path("exitCode").asInt()).isEqualTo(3);
        assertThat(done.text("stdout")).isEqualTo("hi\n");
        assertThat(done.text("stderr")).isEqualTo("oops\n");
        assertThat(done.json().path("done").asBoolean()).isTrue();
        assertThat(done.json().path("error").path("code").asText()).isEqualTo("command_failed");
        assertThat(done.text("guidance")).contains("exited with code 3");
    }

    /**
     * waitFor=output answers at the first line; read_output from its cursor gives only what
     * follows; cancel_execution answers once the command's process is gone.
     */
    String waitForOutputThenCursorThenCancel() {
        long start = System.nanoTime();
        Answer first = call("run_command", Map.of("command", "echo \"pid $$\"; sleep 2; echo second; sleep 300",
                "waitFor", "output", "waitMs", 25_000));
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(first.error()).as(first.json().toString()).isFalse();
        assertThat(first.text("status")).isEqualTo("running");
        assertThat(first.text("stdout")).startsWith("pid ").doesNotContain("second");
        assertThat(waitedMs).as("answered at the first line, not after the 25 s wait").isLessThan(15_000);
        assertThat(first.text("guidance")).contains("read_output").contains("cancel_execution");
        String id = first.text("executionId");

        Answer next = call("read_output", Map.of("executionId", id, "cursor", first.text("cursor"), "waitMs", 20_000));
        assertThat(next.text("stdout")).as("only what follows the cursor").isEqualTo("second\n");
        Answer quiet = call("read_output", Map.of("executionId", id, "cursor", next.text("cursor")));
        assertThat(quiet.text("stdout")).isEmpty();

        String firstLine = first.text("stdout");
        assertThat(probe.running(id, firstLine)).as("the command runs").isTrue();
        Answer cancelled = call("cancel_execution", Map.of("executionId", id));
        assertThat(cancelled.error()).as(cancelled.json().toString()).isFalse();
        assertThat(cancelled.text("status")).isEqualTo("cancelled");
        assertThat(cancelled.text("guidance")).contains("gone");
        assertThat(probe.running(id, firstLine)).as("the command is gone when the cancel answers").isFalse();
        Answer again = call("cancel_execution", Map.of("executionId", id));
        assertThat(again.text("status")).isEqualTo("cancelled");
        return id;
    }

    /** A prompt answered line by line with write_stdin, each answer carrying what the command printed in reply. */
    /** {@code terminal}: whether the workers can give a run a terminal (Docker, or host processes in bubblewrap). */
    void writeStdinAnswersPromptsLineByLine(boolean terminal) {
        Answer started = call("run_command", Map.of("command", "read a; echo got:$a; read b; echo got:$b; cat; echo end",
                "background", true, "stdin", true));
        String id = started.text("executionId");
        Answer one = call("write_stdin", Map.of("executionId", id, "text", "one\n", "waitMs", 20_000));
        assertThat(one.error()).as(one.json().toString()).isFalse();
        assertThat(one.text("stdout")).isEqualTo("got:one\n");
        assertThat(one.text("guidance")).contains("write_stdin").contains("read_output");
        Answer two = call("write_stdin", Map.of("executionId", id, "text", "two\n", "waitMs", 20_000));
        assertThat(two.text("stdout")).isEqualTo("got:two\n");
        Answer last = call("write_stdin", Map.of("executionId", id, "text", "rest\n", "eof", true, "waitMs", 20_000));
        assertThat(last.json().path("stdin").path("closed").asBoolean()).isTrue();
        String tail = last.text("stdout");
        if (!tail.contains("end")) {
            tail += call("read_output", Map.of("executionId", id, "cursor", last.text("cursor"), "waitMs", 20_000)).text("stdout");
        }
        assertThat(tail).isEqualTo("rest\nend\n");
        Answer done = call("get_execution", Map.of("executionId", id, "waitMs", 20_000));
        assertThat(done.text("status")).isEqualTo("succeeded");
        assertThat(done.text("stdout")).isEqualTo("got:one\ngot:two\nrest\nend\n");
        Answer late = call("write_stdin", Map.of("executionId", id, "text", "late\n"));
        assertThat(late.error()).isTrue();
        assertThat(late.json().path("error").path("code").asText()).isEqualTo("execution_finished");
        assertThat(late.text("guidance")).contains("get_execution with executionId " + id);
        // Without stdin open, the agent is told how to get it, in the tool's own terms.
        String plain = call("run_command", Map.of("command", "sleep 20", "background", true)).text("executionId");
        Answer notOpen = call("write_stdin", Map.of("executionId", plain, "text", "x\n"));
        assertThat(notOpen.json().path("error").path("code").asText()).isEqualTo("stdin_not_open");
        assertThat(notOpen.text("guidance")).contains("again with stdin true");
        call("cancel_execution", Map.of("executionId", plain));
        // A terminal.
        String tty = call("run_command", Map.of("command", "test -t 0 && echo is-a-tty; read a; echo got:$a",
                "background", true, "tty", true)).text("executionId");
        if (!terminal) {
            Answer refused = call("get_execution", Map.of("executionId", tty, "waitMs", 20_000));
            assertThat(refused.text("status")).isEqualTo("failed");
            assertThat(refused.json().path("error").path("code").asText()).isEqualTo("sandbox_error");
            assertThat(refused.json().path("error").path("message").asText()).contains("bubblewrap");
            return;
        }
        Answer typed = call("write_stdin", Map.of("executionId", tty, "text", "hi\n", "waitMs", 20_000));
        Answer ttyDone = call("get_execution", Map.of("executionId", tty, "waitMs", 20_000));
        assertThat(ttyDone.text("status")).as(typed.json().toString()).isEqualTo("succeeded");
        assertThat(ttyDone.text("stdout").replace("\r", "")).contains("is-a-tty\n").contains("got:hi\n");
    }

    /** A run waiting for its workspace says so, and which run holds it: not slots, not a cap. */
    void aRunWaitingForItsWorkspaceSaysWhichRunHoldsIt() throws InterruptedException {
        String workspace = "ws-" + java.util.UUID.randomUUID().toString().substring(0, 8);
        String first = call("run_command", Map.of("command", "echo started; sleep 30", "background", true,
                "workspace", workspace)).text("executionId");
        Answer firstOut = call("read_output", Map.of("executionId", first, "waitMs", 20_000));
        assertThat(firstOut.text("status")).isEqualTo("running");
        String second = call("run_command", Map.of("command", "true", "background", true, "workspace", workspace))
                .text("executionId");
        Answer waiting = call("get_execution", Map.of("executionId", second));
        assertThat(waiting.text("status")).isEqualTo("queued");
        assertThat(waiting.text("guidance")).contains("waits for its workspace " + workspace).contains(first)
                .doesNotContain("running cap");
        call("cancel_execution", Map.of("executionId", second));
        call("cancel_execution", Map.of("executionId", first));
    }

    /**
     * Issue 31: run_command asks for an identity; get_execution shows the progress a run reported
     * of itself and a child's parentId. The run's token is issued here as its worker would.
     */
    void identityProgressAndParentShow(io.outrun.api.http.ApiHarness api) throws Exception {
        // A node that cannot sign fails these with identity_unavailable; the submission keeps what was asked.
        Answer withIdentity = call("run_command", Map.of("command", "true", "background", true, "identity", "https://svc.example"));
        assertThat(withIdentity.error()).as(withIdentity.json().toString()).isFalse();
        assertThat(api.alice().get(withIdentity.text("executionId")).identity().audience()).isEqualTo("https://svc.example");
        Answer asDefault = call("run_command", Map.of("command", "true", "background", true, "identity", true));
        assertThat(api.alice().get(asDefault.text("executionId")).identity()).as("the server's default audience").isNotNull();
        Answer badIdentity = call("run_command", Map.of("command", "true", "identity", 5));
        assertThat(badIdentity.error()).isTrue();
        assertThat(badIdentity.json().path("error").path("message").asText()).contains("identity");

        String id = call("run_command", Map.of("command", "sleep 60", "background", true)).text("executionId");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        io.outrun.client.wire.ExecutionView v;
        while (!(v = api.alice().get(id, 1000)).status().equals("running")) {
            assertThat(v.finished()).as(v.status() + ": " + v.error()).isFalse();
            assertThat(System.nanoTime()).as("running within 30 s").isLessThan(deadline);
        }
        var keys = new io.outrun.core.identity.SigningKeys(api.core().pool(),
                io.outrun.core.secrets.SecretsKey.fromBase64(io.outrun.core.secrets.SecretsKey.generate(), "test"));
        var execution = api.core().submissions().find(java.util.UUID.fromString(id), io.outrun.core.store.OutputStore.Read.NONE)
                .orElseThrow();
        String runToken = new io.outrun.core.identity.TokenIssuer(keys, api.base().toString())
                .issue(execution, java.time.Instant.now()).apiToken();
        var run = api.client(runToken);
        run.progress(id, 40, "2 of 5 shards");
        String child = run.submit(io.outrun.client.wire.SubmitRequest.of("sleep 60")).executionId();

        Answer parent = call("get_execution", Map.of("executionId", id));
        assertThat(parent.json().path("progress").path("percent").asInt()).isEqualTo(40);
        assertThat(parent.json().path("progress").path("message").asText()).isEqualTo("2 of 5 shards");
        assertThat(parent.json().path("progress").path("at").asText()).isNotBlank();
        assertThat(parent.json().has("parentId")).isFalse();
        Answer kid = call("get_execution", Map.of("executionId", child));
        assertThat(kid.text("parentId")).isEqualTo(id);
        assertThat(kid.json().has("progress")).isFalse();
        call("cancel_execution", Map.of("executionId", id));
        assertThat(api.alice().get(child, 10_000).status()).as("cancelled with its parent").isEqualTo("cancelled");
    }

    void badIdAnswersWithItsErrorCode() {
        for (String tool : List.of("get_execution", "read_output", "cancel_execution")) {
            Answer missing = call(tool, Map.of("executionId", "00000000-0000-0000-0000-000000000000"));
            assertThat(missing.error()).as(tool).isTrue();
            assertThat(missing.json().path("error").path("code").asText()).as(tool).isEqualTo("execution_not_found");
            assertThat(missing.text("guidance")).isNotBlank();
        }
        Answer malformed = call("get_execution", Map.of("executionId", "not-an-id"));
        assertThat(malformed.json().path("error").path("code").asText()).isEqualTo("execution_not_found");
        Answer noCommand = call("run_command", Map.of("background", true));
        assertThat(noCommand.error()).isTrue();
        assertThat(noCommand.json().path("error").path("code").asText()).isEqualTo("invalid_request");
        assertThat(noCommand.json().path("error").path("message").asText()).contains("command");
        Answer zeroAttempts = call("run_command", Map.of("command", "true", "maxAttempts", 0));
        assertThat(zeroAttempts.json().path("error").path("code").asText()).isEqualTo("invalid_request");
        assertThat(zeroAttempts.json().path("error").path("message").asText()).contains("maxAttempts");
        Answer badImage = call("run_command", Map.of("command", "true", "image", "debian:12"));
        assertThat(badImage.error()).isTrue();
        assertThat(badImage.json().path("error").path("code").asText()).isEqualTo("image_not_allowed");
    }

    /** maxAttempts 1: its worker SIGKILLed mid-run, it ends failed with lease_expired after one attempt. */
    String maxAttemptsOneIsNotRerunAfterItsWorkerIsKilled(WorkerProcess worker) throws Exception {
        Answer started = call("run_command", Map.of("command", "echo started; sleep 300", "background", true,
                "maxAttempts", 1));
        assertThat(started.json().path("maxAttempts").asInt()).isEqualTo(1);
        String id = started.text("executionId");
        Answer running = call("read_output", Map.of("executionId", id, "waitMs", 20_000));
        if (running.text("stdout").isEmpty()) {
            running = call("read_output", Map.of("executionId", id, "cursor", running.text("cursor"), "waitMs", 20_000));
        }
        assertThat(running.text("stdout")).isEqualTo("started\n");
        worker.kill();
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        Answer end;
        do {
            end = call("get_execution", Map.of("executionId", id, "waitMs", 5_000));
            assertThat(end.text("status")).as("never queued again").isNotEqualTo("queued");
        } while (end.text("status").equals("running") && System.nanoTime() < deadline);
        assertThat(end.text("status")).isEqualTo("failed");
        assertThat(end.json().path("error").path("code").asText()).isEqualTo("lease_expired");
        assertThat(end.json().path("attempt").asInt()).isEqualTo(1);
        assertThat(end.text("guidance")).contains("not run again");
        return id;
    }
}
