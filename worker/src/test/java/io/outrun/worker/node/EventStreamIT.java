package io.outrun.worker.node;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.api.auth.TokenStore;
import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.core.owner.OwnerLimits;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.ApiCalls;
import io.outrun.worker.testing.WorkerProcess;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 28: {@code GET /v1/executions/{id}/events}. A client cut mid-run and reconnected with
 * {@code Last-Event-ID} sees every byte of both streams exactly once, a status event on each
 * change, and one end event; against a real worker JVM.
 */
class EventStreamIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    record Event(String name, String id, JsonNode data) {
    }

    @Test
    void aClientCutMidRunResumesWithLastEventIdAndSeesEveryByteOnce() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core core = Core.open(db, "api", OwnerLimits.DEFAULTS);
             ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "api");
             WorkerProcess w = WorkerProcess.start(db, "events-1", 2)) {
            String token = new TokenStore(core.pool()).create("alice").token();
            ApiCalls a = ApiCalls.on(api.port(), token);
            String submitted = a.post("/v1/executions", "{\"command\": \"for i in $(seq 1 40); do echo out-$i;"
                    + " echo err-$i >&2; sleep 0.1; done; exit 2\"}").body();
            String id = JSON.readTree(submitted).get("executionId").asText();

            // First connection: read until some output came, then hang up mid-run.
            List<Event> first = new ArrayList<>();
            try (InputStream in = open(a, id, null)) {
                read(in, first, events -> events.stream().filter(e -> e.name().equals("output")).count() >= 6);
            }
            assertThat(first.get(0).name()).isEqualTo("status");
            assertThat(first).noneMatch(e -> e.name().equals("end"));
            assertThat(text(first, "stdout").length()).as("cut mid-run").isLessThan(40 * 7);
            String lastId = first.get(first.size() - 1).id();

            List<Event> second = new ArrayList<>();
            try (InputStream in = open(a, id, lastId)) {
                read(in, second, events -> events.stream().anyMatch(e -> e.name().equals("end")));
            }
            List<Event> all = new ArrayList<>(first);
            all.addAll(second);
            String expectedOut = IntStream.rangeClosed(1, 40).mapToObj(i -> "out-" + i + "\n").collect(Collectors.joining());
            String expectedErr = IntStream.rangeClosed(1, 40).mapToObj(i -> "err-" + i + "\n").collect(Collectors.joining());
            assertThat(text(all, "stdout")).isEqualTo(expectedOut);
            assertThat(text(all, "stderr")).isEqualTo(expectedErr);
            Event end = second.get(second.size() - 1);
            assertThat(end.name()).isEqualTo("end");
            assertThat(end.data().get("status").asText()).isEqualTo("failed");
            assertThat(end.data().get("exitCode").asInt()).isEqualTo(2);
            assertThat(end.data().at("/error/code").asText()).isEqualTo("command_failed");
            assertThat(all.stream().filter(e -> e.name().equals("status")).map(e -> e.data().get("status").asText()))
                    .contains("running");

            // After the end, a reconnect from the last id gets the end again and nothing twice.
            List<Event> again = new ArrayList<>();
            try (InputStream in = open(a, id, end.id())) {
                read(in, again, events -> events.stream().anyMatch(e -> e.name().equals("end")));
            }
            assertThat(again).noneMatch(e -> e.name().equals("output"));

            // Output that stops inside a UTF-8 character waits for the rest without spinning (the
            // held-back bytes are no reason to read again), then gives the character whole.
            String split = JSON.readTree(a.post("/v1/executions", "{\"command\": \"printf 'ab\\\\xe2\\\\x82'; sleep 3;"
                    + " printf '\\\\xac done\\\\n'\"}").body()).get("executionId").asText();
            List<String> lines = new ArrayList<>();
            try (BufferedReader r = new BufferedReader(new InputStreamReader(open(a, split, null),
                    StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    lines.add(line);
                }
            }
            assertThat(lines.stream().filter(l -> l.startsWith(": keep-alive")).count()).as("no spin").isLessThanOrEqualTo(2);
            StringBuilder stdout = new StringBuilder();
            for (String l : lines) {
                if (l.startsWith("data: ") && l.contains("\"stream\":\"stdout\"")) {
                    stdout.append(JSON.readTree(l.substring(6)).get("text").asText());
                }
            }
            assertThat(stdout.toString()).isEqualTo("ab€ done\n");

            // Errors answer JSON before any stream starts.
            HttpResponse<String> bad = a.send(a.request("/v1/executions/" + id + "/events").header("Last-Event-ID", "garbage")
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(bad.statusCode()).isEqualTo(400);
            HttpResponse<String> missing = a.get("/v1/executions/" + java.util.UUID.randomUUID() + "/events");
            assertThat(missing.statusCode()).isEqualTo(404);
            assertThat(missing.body()).contains("execution_not_found");
        }
    }

    private static String text(List<Event> events, String stream) {
        return events.stream().filter(e -> e.name().equals("output") && e.data().get("stream").asText().equals(stream))
                .map(e -> e.data().get("text").asText()).collect(Collectors.joining());
    }

    private static InputStream open(ApiCalls a, String id, String lastEventId) {
        HttpRequest.Builder b = a.request("/v1/executions/" + id + "/events").header("Accept", "text/event-stream");
        if (lastEventId != null) {
            b.header("Last-Event-ID", lastEventId);
        }
        HttpResponse<InputStream> r = a.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/event-stream");
        return r.body();
    }

    /** Reads events until {@code enough} holds (or the stream ends). */
    private static void read(InputStream in, List<Event> into, java.util.function.Predicate<List<Event>> enough)
            throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        String name = null;
        String id = null;
        StringBuilder data = new StringBuilder();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        String line;
        while (System.nanoTime() < deadline && (line = r.readLine()) != null) {
            if (line.isEmpty()) {
                if (name != null) {
                    into.add(new Event(name, id, JSON.readTree(data.toString())));
                    if (enough.test(into)) {
                        return;
                    }
                }
                name = null;
                id = null;
                data.setLength(0);
            } else if (line.startsWith("event: ")) {
                name = line.substring(7);
            } else if (line.startsWith("id: ")) {
                id = line.substring(4);
            } else if (line.startsWith("data: ")) {
                data.append(line.substring(6));
            }
        }
        throw new AssertionError("the stream ended before what was awaited: " + into);
    }
}
