package io.outrun.worker.node;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.resource.v1.Resource;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.outrun.api.auth.TokenStore;
import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.core.owner.OwnerLimits;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import io.outrun.core.trace.AttemptTrace;
import io.outrun.core.trace.Tracing;
import io.outrun.worker.testing.ApiCalls;
import io.outrun.worker.testing.WorkerProcess;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 30: one trace per execution, from the submit on the API node to the end on whichever
 * worker ran it. The API node (in this JVM) records with the SDK's in-memory exporter; two real
 * worker JVMs, configured only by the standard {@code OTEL_*} environment, export OTLP over HTTP
 * to a receiver here, which decodes what they send with the OTLP protobuf types. A submit with a
 * {@code traceparent} joins the caller's trace, and the command sees {@code TRACEPARENT} naming
 * its attempt's span.
 */
class TracingIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
    private static final String CALLER_SPAN = "00f067aa0ba902b7";

    /** A span as a worker exported it. */
    record Exported(String service, String traceId, String spanId, String parentSpanId, String name,
                    Map<String, String> attributes) {
    }

    /** An OTLP/HTTP trace receiver (protobuf), as a collector would be. */
    static final class OtlpReceiver implements AutoCloseable {
        final List<Exported> spans = new CopyOnWriteArrayList<>();
        final HttpServer server;

        OtlpReceiver() throws Exception {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
            server.createContext("/v1/traces", ex -> {
                ExportTraceServiceRequest request = ExportTraceServiceRequest.parseFrom(ex.getRequestBody().readAllBytes());
                for (ResourceSpans rs : request.getResourceSpansList()) {
                    String service = attributes(rs.getResource()).get("service.name");
                    for (ScopeSpans ss : rs.getScopeSpansList()) {
                        for (io.opentelemetry.proto.trace.v1.Span s : ss.getSpansList()) {
                            spans.add(new Exported(service, hex(s.getTraceId()), hex(s.getSpanId()),
                                    hex(s.getParentSpanId()), s.getName(), attributes(s.getAttributesList())));
                        }
                    }
                }
                byte[] answer = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
                ex.getResponseHeaders().add("Content-Type", "application/x-protobuf");
                ex.sendResponseHeaders(200, answer.length);
                ex.getResponseBody().write(answer);
                ex.close();
            });
            server.start();
        }

        private static String hex(com.google.protobuf.ByteString b) {
            return HexFormat.of().formatHex(b.toByteArray());
        }

        private static Map<String, String> attributes(Resource r) {
            return attributes(r.getAttributesList());
        }

        private static Map<String, String> attributes(List<KeyValue> kvs) {
            Map<String, String> m = new HashMap<>();
            for (KeyValue kv : kvs) {
                var v = kv.getValue();
                m.put(kv.getKey(), v.hasIntValue() ? String.valueOf(v.getIntValue()) : v.getStringValue());
            }
            return m;
        }

        List<Exported> of(String executionId) {
            return spans.stream().filter(s -> executionId.equals(s.attributes().get("outrun.execution.id"))).toList();
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }

    @Test
    void oneTraceFromSubmitToEndAcrossNodes() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        InMemorySpanExporter apiSpans = InMemorySpanExporter.create();
        OpenTelemetrySdk sdk = OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
                .addSpanProcessor(SimpleSpanProcessor.create(apiSpans)).build()).build();
        Tracing previous = Tracing.install(Tracing.of(sdk));
        try (OtlpReceiver otlp = new OtlpReceiver()) {
            Map<String, String> env = Map.of(
                    "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:" + otlp.server.getAddress().getPort(),
                    "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
                    "OTEL_BSP_SCHEDULE_DELAY", "100",
                    "OTEL_SERVICE_NAME", "outrun-worker");
            try (Core core = Core.open(db, "api", OwnerLimits.DEFAULTS);
                 ApiNode api = ApiNode.start(core, ApiConfig.defaults("127.0.0.1", 0), "api");
                 WorkerProcess w1 = WorkerProcess.startWith(env, db, "trace-1", 1, "process");
                 WorkerProcess w2 = WorkerProcess.startWith(env, db, "trace-2", 1, "process")) {
                w1.awaitLog("traces: exporting with", Duration.ofSeconds(5));
                String token = new TokenStore(core.pool()).create("alice").token();
                ApiCalls a = ApiCalls.on(api.port(), token);

                // Four runs in the caller's trace, a second each: both single-slot nodes run some.
                String caller = "00-" + TRACE_ID + "-" + CALLER_SPAN + "-01";
                List<String> ids = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    HttpResponse<String> r = a.send(a.request("/v1/executions").header("Content-Type", "application/json")
                            .header("traceparent", caller).header("tracestate", "acme=t61rcWkgMzE")
                            .POST(HttpRequest.BodyPublishers.ofString("{\"command\": \"printf '%s %s\\\\n' \\\"$TRACEPARENT\\\""
                                    + " \\\"$TRACESTATE\\\"; sleep 1; echo built > out.txt\", \"artifacts\": [\"out.txt\"]}"))
                            .build(), HttpResponse.BodyHandlers.ofString());
                    assertThat(r.statusCode()).as(r.body()).isEqualTo(202);
                    ids.add(JSON.readTree(r.body()).get("executionId").asText());
                }
                for (String id : ids) {
                    JsonNode ended = Await.until("execution " + id + " ends", Duration.ofSeconds(60), () -> {
                        JsonNode e = json(a.read("/v1/executions/" + id + "?waitMs=5000"));
                        return e.path("status").asText().matches("queued|running") ? null : e;
                    });
                    assertThat(ended.get("status").asText()).as(ended.toString()).isEqualTo("succeeded");
                }

                Set<String> nodes = new java.util.TreeSet<>();
                List<String> steps = List.of("execution.queue_wait", "execution.claim", "execution.attempt",
                        "sandbox.start", "execution.command", "output.flush", "artifacts.save", "execution.end");
                for (String id : ids) {
                    // The submit's span, on the API node: a child of the caller's span.
                    SpanData submit = apiSpans.getFinishedSpanItems().stream()
                            .filter(s -> id.equals(s.getAttributes().get(AttemptTrace.EXECUTION_ID))).findFirst()
                            .orElseThrow(() -> new AssertionError("no submit span for " + id));
                    assertThat(submit.getName()).isEqualTo("execution.submit");
                    assertThat(submit.getTraceId()).isEqualTo(TRACE_ID);
                    assertThat(submit.getParentSpanId()).isEqualTo(CALLER_SPAN);

                    // Every later step, from the worker that ran it, in the same trace.
                    List<Exported> spans;
                    try {
                      spans = Await.until("the spans of " + id, Duration.ofSeconds(30), () -> {
                        List<Exported> s = otlp.of(id);
                        return s.stream().map(Exported::name).collect(Collectors.toSet()).containsAll(steps) ? s : null;
                      });
                    } catch (AssertionError e) {
                        throw new AssertionError(e.getMessage() + "; received " + otlp.of(id).stream().map(Exported::name)
                                .sorted().toList() + " of " + steps, e);
                    }
                    assertThat(spans).allSatisfy(s -> {
                        assertThat(s.traceId()).isEqualTo(TRACE_ID);
                        assertThat(s.service()).isEqualTo("outrun-worker");
                    });
                    Exported attempt = one(spans, "execution.attempt");
                    for (String name : List.of("execution.queue_wait", "execution.claim", "execution.attempt")) {
                        assertThat(one(spans, name).parentSpanId()).as(name).isEqualTo(submit.getSpanId());
                    }
                    for (String name : List.of("sandbox.start", "execution.command", "artifacts.save", "execution.end")) {
                        assertThat(one(spans, name).parentSpanId()).as(name).isEqualTo(attempt.spanId());
                    }
                    assertThat(attempt.attributes()).containsEntry("outrun.status", "succeeded")
                            .containsEntry("outrun.owner", "alice").containsEntry("outrun.attempt", "1");
                    assertThat(one(spans, "execution.command").attributes()).containsEntry("outrun.exit_code", "0");
                    nodes.add(attempt.attributes().get("outrun.node"));

                    // The command joined the trace under its attempt's span, the caller's tracestate passed on.
                    String stdout = json(a.read("/v1/executions/" + id)).at("/stdout/text").asText();
                    assertThat(stdout).isEqualTo("00-" + TRACE_ID + "-" + attempt.spanId() + "-01 acme=t61rcWkgMzE\n");
                }
                assertThat(nodes).as("both worker nodes ran some").containsExactly("trace-1", "trace-2");

                // A worker SIGKILLed mid-run: the sweep's re-drive and the next attempt, on the other
                // node, join the same trace (its context is kept with the row).
                String lost = JSON.readTree(a.send(a.request("/v1/executions").header("Content-Type", "application/json")
                        .header("traceparent", caller).POST(HttpRequest.BodyPublishers.ofString(
                                "{\"command\": \"sleep 4; echo $OUTRUN_ATTEMPT\"}")).build(),
                        HttpResponse.BodyHandlers.ofString()).body()).get("executionId").asText();
                Exported firstRun = Await.until("the first attempt's span", Duration.ofSeconds(30), () -> otlp.of(lost)
                        .stream().filter(x -> x.name().equals("execution.claim")).findFirst().orElse(null));
                (firstRun.attributes().get("outrun.node").equals("trace-1") ? w1 : w2).kill();
                JsonNode redriven = Await.until("execution " + lost + " ends on the other node", Duration.ofSeconds(60), () -> {
                    JsonNode e = json(a.read("/v1/executions/" + lost + "?waitMs=5000"));
                    return e.path("status").asText().matches("queued|running") ? null : e;
                });
                assertThat(redriven.get("status").asText()).as(redriven.toString()).isEqualTo("succeeded");
                assertThat(redriven.get("attempt").asInt()).isEqualTo(2);
                List<Exported> lostSpans = Await.until("the second attempt's spans", Duration.ofSeconds(30), () -> {
                    List<Exported> x = otlp.of(lost);
                    return x.stream().anyMatch(y -> y.name().equals("execution.redrive"))
                            && x.stream().anyMatch(y -> y.name().equals("execution.attempt")
                            && "2".equals(y.attributes().get("outrun.attempt"))) ? x : null;
                });
                assertThat(lostSpans).allSatisfy(x -> assertThat(x.traceId()).isEqualTo(TRACE_ID));
                assertThat(lostSpans.stream().filter(x -> x.name().equals("execution.attempt")).findFirst().orElseThrow()
                        .attributes().get("outrun.node")).isNotEqualTo(firstRun.attributes().get("outrun.node"));

                // A queued execution cancelled: its end is in its trace, from the API node.
                String cancelled = JSON.readTree(a.send(a.request("/v1/executions").header("Content-Type", "application/json")
                        .header("traceparent", caller).POST(HttpRequest.BodyPublishers.ofString(
                                "{\"command\": \"true\", \"delayMs\": 600000}")).build(),
                        HttpResponse.BodyHandlers.ofString()).body()).get("executionId").asText();
                assertThat(a.post("/v1/executions/" + cancelled + "/cancel", "").statusCode()).isEqualTo(200);
                SpanData end = apiSpans.getFinishedSpanItems().stream().filter(x -> x.getName().equals("execution.end")
                        && cancelled.equals(x.getAttributes().get(AttemptTrace.EXECUTION_ID))).findFirst().orElseThrow();
                assertThat(end.getTraceId()).isEqualTo(TRACE_ID);
                assertThat(end.getAttributes().get(AttemptTrace.STATUS)).isEqualTo("cancelled");

                // Without a traceparent (or with a malformed one), the submit starts a trace of its own.
                for (String header : new String[] {null, "00-zzzz-not-a-trace"}) {
                    HttpRequest.Builder b = a.request("/v1/executions").header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString("{\"command\": \"echo $TRACEPARENT\", \"waitMs\": 20000}"));
                    if (header != null) {
                        b.header("traceparent", header);
                    }
                    HttpResponse<String> r = a.send(b.build(), HttpResponse.BodyHandlers.ofString());
                    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                    JsonNode e = json(r.body());
                    String id = e.get("executionId").asText();
                    SpanData submit = apiSpans.getFinishedSpanItems().stream()
                            .filter(s -> id.equals(s.getAttributes().get(AttemptTrace.EXECUTION_ID))).findFirst().orElseThrow();
                    assertThat(submit.getParentSpanContext().isValid()).as("a root span").isFalse();
                    assertThat(submit.getTraceId()).isNotEqualTo(TRACE_ID);
                    assertThat(e.at("/stdout/text").asText()).startsWith("00-" + submit.getTraceId() + "-");
                }
            }
        } finally {
            Tracing.install(previous);
            sdk.close();
        }
    }

    private static Exported one(List<Exported> spans, String name) {
        List<Exported> named = spans.stream().filter(s -> s.name().equals(name)).toList();
        assertThat(named).as(name).hasSize(1);
        return named.get(0);
    }

    private static JsonNode json(String body) {
        try {
            return JSON.readTree(body);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
