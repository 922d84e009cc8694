package io.outrun.core.trace;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Traces on and off, W3C headers kept as received, and the spans of an attempt, with the SDK's in-memory exporter. */
class TracingTest {

    private static final String CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    private final InMemorySpanExporter exported = InMemorySpanExporter.create();
    private final OpenTelemetrySdk sdk = OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
            .addSpanProcessor(SimpleSpanProcessor.create(exported)).build()).build();
    private final Tracing tracing = Tracing.of(sdk);

    @AfterEach
    void close() {
        sdk.close();
    }

    @Test
    void offUnlessTheEnvironmentNamesAnExporter() {
        assertThat(Tracing.fromEnvironment(Map.of(), name -> null).on()).isFalse();
        assertThat(Tracing.fromEnvironment(Map.of("OTEL_SERVICE_NAME", "x"), name -> null).on()).isFalse();
        assertThat(Tracing.fromEnvironment(Map.of("OTEL_TRACES_EXPORTER", "none",
                "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), name -> null).on()).isFalse();
        assertThat(Tracing.fromEnvironment(Map.of("OTEL_SDK_DISABLED", "true",
                "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), name -> null).on()).isFalse();
        // An endpoint alone turns it on, OTLP over HTTP (no gRPC sender is shipped).
        Tracing on = Tracing.fromEnvironment(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"), name -> null);
        try {
            assertThat(on.on()).isTrue();
        } finally {
            on.close();
        }
        Tracing byProperty = Tracing.fromEnvironment(Map.of(), name -> name.equals("otel.exporter.otlp.endpoint") ? "x" : null);
        try {
            assertThat(byProperty.on()).as("a system property counts as the variable").isTrue();
        } finally {
            byProperty.close();
        }
    }

    @Test
    void headersAreKeptAsReceivedAndInvalidOnesIgnored() {
        TraceContext t = TraceContext.parse(" " + CALLER + " ", "acme=1");
        assertThat(t).isEqualTo(new TraceContext(CALLER, "acme=1"));
        assertThat(t.traceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
        for (String bad : new String[] {null, "", "garbage", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"}) {
            assertThat(TraceContext.parse(bad, "acme=1")).as(bad).isNull();
        }
        assertThat(TraceContext.parse(CALLER, "x".repeat(513)).tracestate()).as("an over-long tracestate is dropped").isNull();
        assertThat(TraceContext.parse(CALLER, " ").tracestate()).isNull();
    }

    @Test
    void theSubmitsSpanIsKeptSoLaterSpansJoinTheCallersTrace() {
        TraceContext caller = TraceContext.parse(CALLER, "acme=1");
        Span submit = tracing.tracer().spanBuilder("execution.submit").setParent(tracing.parent(caller)).startSpan();
        TraceContext kept = tracing.keep(submit, caller);
        submit.end();
        assertThat(kept.traceId()).isEqualTo(caller.traceId());
        assertThat(kept.traceparent()).isEqualTo("00-" + caller.traceId() + "-" + submit.getSpanContext().getSpanId() + "-01");
        assertThat(kept.tracestate()).isEqualTo("acme=1");
        assertThat(exported.getFinishedSpanItems().get(0).getParentSpanId()).isEqualTo("00f067aa0ba902b7");
        // Off: the caller's context is what the command gets.
        assertThat(Tracing.off().keep(Span.getInvalid(), caller)).isEqualTo(caller);
        assertThat(AttemptTrace.none(caller).forCommand()).isEqualTo(caller);
    }

    @Test
    void anAttemptsSpansHangUnderTheKeptContext() {
        TraceContext kept = TraceContext.parse(CALLER, null);
        UUID id = UUID.randomUUID();
        long sent = System.nanoTime();
        long answered = sent + TimeUnit.MILLISECONDS.toNanos(3);
        // The database's clock a little ahead of this node's: the wait starts no later than the claim.
        AttemptTrace trace = AttemptTrace.begin(tracing, kept, id, "alice", 2, "n1", Instant.now().plusSeconds(5),
                sent, answered);
        trace.step("execution.command").end();
        long now = System.nanoTime();
        trace.flushed(now, now + 1000, 10);
        trace.flushed(now + 2000, now + 3000, 10); // within 10 s of the last: not sampled
        trace.flushed(now + TimeUnit.SECONDS.toNanos(11), now + TimeUnit.SECONDS.toNanos(11) + 1000, 10);
        trace.end("succeeded", 0, null);
        trace.end("left", null, null); // only the first end counts

        List<SpanData> spans = exported.getFinishedSpanItems();
        SpanData attempt = named(spans, "execution.attempt").get(0);
        SpanData wait = named(spans, "execution.queue_wait").get(0);
        assertThat(wait.getStartEpochNanos()).isLessThanOrEqualTo(wait.getEndEpochNanos());
        assertThat(named(spans, "execution.claim").get(0).getParentSpanId()).isEqualTo("00f067aa0ba902b7");
        assertThat(attempt.getParentSpanId()).isEqualTo("00f067aa0ba902b7");
        assertThat(attempt.getTraceId()).isEqualTo(kept.traceId());
        assertThat(attempt.getAttributes().get(AttemptTrace.STATUS)).isEqualTo("succeeded");
        assertThat(attempt.getAttributes().get(AttemptTrace.ATTEMPT)).isEqualTo(2L);
        assertThat(named(spans, "output.flush")).hasSize(2).allSatisfy(f -> {
            assertThat(f.getParentSpanId()).isEqualTo(attempt.getSpanId());
            assertThat(f.getAttributes().get(AttemptTrace.EXECUTION_ID)).isEqualTo(id.toString());
        });
        assertThat(named(spans, "execution.command").get(0).getParentSpanId()).isEqualTo(attempt.getSpanId());
        assertThat(trace.forCommand().traceparent()).isEqualTo("00-" + kept.traceId() + "-" + attempt.getSpanId() + "-01");
        assertThat(named(spans, "execution.attempt")).hasSize(1);
    }

    private static List<SpanData> named(List<SpanData> spans, String name) {
        return spans.stream().filter(s -> s.getName().equals(name)).toList();
    }
}
