package io.outrun.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import io.outrun.client.wire.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code outrun run --batch FILE} against a scripted API (the JDK's HTTP server): the usage errors
 * that stop it before anything is sent, the requests of at most 1000, the line numbers it prints
 * and its exit codes. CliBatchIT runs it against a real API node.
 */
class RunBatchTest {

    private HttpServer server;
    /** The submissions of each request the fake received. */
    private final List<ArrayNode> requests = new CopyOnWriteArrayList<>();
    /** A request number (0-based) the fake refuses as a whole with 503, or -1. */
    private volatile int refuseRequest = -1;

    @TempDir
    Path dir;

    record Result(int code, String out, String err) {
    }

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/v1/executions/batch", exchange -> {
            ArrayNode items = (ArrayNode) Json.mapper().readTree(exchange.getRequestBody()).path("submissions");
            int n = requests.size();
            requests.add(items);
            ObjectNode answer = Json.mapper().createObjectNode();
            int status = 200;
            if (n == refuseRequest) {
                status = 503;
                answer.put("status", "error").put("guidance", "Retry in a few seconds.").putObject("error")
                        .put("code", "database_unavailable").put("message", "the database does not answer");
            } else {
                ArrayNode results = answer.putArray("results");
                int accepted = 0;
                for (int i = 0; i < items.size(); i++) {
                    ObjectNode r = results.addObject().put("index", i);
                    if (items.get(i).path("command").asText().equals("bad")) {
                        r.put("status", 400).putObject("error").put("status", "error").put("guidance", "fix it")
                                .putObject("error").put("code", "invalid_request").put("message", "timeoutMs: must be at least 1");
                    } else {
                        accepted++;
                        r.put("status", 202).put("replayed", items.get(i).has("idempotencyKey"));
                        r.putObject("execution").put("executionId", "e" + n + "-" + i).put("status", "queued");
                    }
                }
                answer.put("accepted", accepted).put("refused", items.size() - accepted);
            }
            byte[] body = Json.mapper().writeValueAsBytes(answer);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(status, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private Result run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new RunCommand());
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        // As the root command (io.outrun.worker.cli.Outrun) does.
        cl.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            if (ex instanceof UsageException) {
                commandLine.getErr().println("outrun: configuration error: " + ex.getMessage());
                return 2;
            }
            throw ex;
        });
        String[] all = new String[args.length + 4];
        all[0] = "--api";
        all[1] = "http://127.0.0.1:" + server.getAddress().getPort();
        all[2] = "--token";
        all[3] = "otk_test";
        System.arraycopy(args, 0, all, 4, args.length);
        return new Result(cl.execute(all), out.toString(), err.toString());
    }

    private Path file(String text) throws IOException {
        Path f = dir.resolve("jobs.jsonl");
        Files.writeString(f, text);
        return f;
    }

    @Test
    void eachLinesIdOrErrorIsPrintedWithItsLineAndARefusalExitsWith3() throws IOException {
        Path f = file("# two good, one bad\n{\"command\": \"echo a\"}\n\n{\"command\": \"bad\"}\n"
                + "{\"command\": \"echo c\", \"idempotencyKey\": \"k-c\"}\n");
        Result r = run("--batch", f.toString());
        assertThat(r.code()).as(r.err()).isEqualTo(BatchSubmit.SOME_REFUSED);
        assertThat(r.out()).isEqualTo("2\te0-0\n4\terror\tinvalid_request\ttimeoutMs: must be at least 1\n5\te0-2\treplayed\n");
        assertThat(r.err()).contains("3 submissions from " + f + ": 2 accepted, 1 refused (line 4)");
        assertThat(requests).hasSize(1);
        assertThat(requests.get(0).get(2).path("idempotencyKey").asText()).isEqualTo("k-c");
        assertThat(requests.get(0).get(0).has("idempotencyKey")).isFalse();
    }

    @Test
    void allAcceptedExitsWith0AndJsonPrintsTheResultWithItsLine() throws IOException {
        Result r = run("--batch", file("{\"command\": \"echo a\"}\n{\"command\": \"echo b\"}\n").toString(), "--json");
        assertThat(r.code()).as(r.err()).isZero();
        List<JsonNode> rows = r.out().lines().map(l -> {
            try {
                return Json.mapper().readTree(l);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }).toList();
        assertThat(rows).hasSize(2);
        assertThat(rows.get(1).path("line").asInt()).isEqualTo(2);
        assertThat(rows.get(1).path("index").asInt()).isEqualTo(1);
        assertThat(rows.get(1).path("status").asInt()).isEqualTo(202);
        assertThat(rows.get(1).path("execution").path("executionId").asText()).isEqualTo("e0-1");
    }

    @Test
    void aLongFileIsSentInRequestsOfAtMost1000() throws IOException {
        String text = IntStream.rangeClosed(1, 2500).mapToObj(i -> i == 1500 ? "{\"command\": \"bad\"}"
                : "{\"command\": \"echo " + i + "\"}").collect(Collectors.joining("\n", "# header\n", "\n"));
        Result r = run("--batch", file(text).toString());
        assertThat(r.code()).isEqualTo(BatchSubmit.SOME_REFUSED);
        assertThat(requests).extracting(ArrayNode::size).containsExactly(1000, 1000, 500);
        assertThat(requests.get(2).get(0).path("command").asText()).isEqualTo("echo 2001");
        List<String> out = r.out().lines().toList();
        assertThat(out).hasSize(2500);
        assertThat(out.get(0)).isEqualTo("2\te0-0");
        assertThat(out.get(1499)).startsWith("1501\terror\tinvalid_request");
        assertThat(out.get(2499)).isEqualTo("2501\te2-499");
    }

    @Test
    void aRequestRefusedAsAWholeSaysFromWhichLineNothingWasStored() throws IOException {
        refuseRequest = 1;
        String text = IntStream.rangeClosed(1, 1200).mapToObj(i -> "{\"command\": \"echo " + i + "\"}")
                .collect(Collectors.joining("\n"));
        Result r = run("--batch", file(text).toString());
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.out().lines().count()).as("the first request's 1000 lines").isEqualTo(1000);
        assertThat(r.err()).contains("the request from " + dir.resolve("jobs.jsonl") + " line 1001 on was refused as a whole")
                .contains("the submissions printed above were stored").contains("database_unavailable");
        assertThat(requests).hasSize(2);
    }

    @Test
    void aBadLineStopsItBeforeAnythingIsSent() throws IOException {
        Result r = run("--batch", file("{\"command\": \"a\"}\n{\"command\": \"b\"\n").toString());
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("jobs.jsonl line 2: not valid JSON");
        assertThat(requests).isEmpty();
    }

    @Test
    void aCommandOrAnotherRunOptionBesideBatchIsAUsageError() throws IOException {
        String f = file("{\"command\": \"a\"}\n").toString();
        Result command = run("--batch", f, "--", "make", "test");
        assertThat(command.code()).isEqualTo(2);
        assertThat(command.err()).contains("give no command after -- with it (got: make test)");
        Result options = run("--batch", f, "--label", "a=b", "--wait", "--timeout-ms", "5");
        assertThat(options.code()).isEqualTo(2);
        assertThat(options.err()).contains("--batch takes no --label, --wait, --timeout-ms:");
        Result script = run("--batch", f, "--script", f);
        assertThat(script.err()).contains("--batch takes no --script");
        assertThat(requests).isEmpty();
    }

    @Test
    void stdinIsReadWithDash() {
        java.io.InputStream keyboard = System.in;
        System.setIn(new java.io.ByteArrayInputStream("{\"command\": \"x\"}\n".getBytes(StandardCharsets.UTF_8)));
        try {
            Result r = run("--batch", "-");
            assertThat(r.code()).as(r.err()).isZero();
            assertThat(r.out()).isEqualTo("1\te0-0\n");
            assertThat(r.err()).contains("1 submissions from stdin: 1 accepted");
        } finally {
            System.setIn(keyboard);
        }
    }
}
