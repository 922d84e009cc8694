package io.outrun.core.trace;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import io.outrun.core.config.ConfigException;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This process's OpenTelemetry traces: off (a no-op tracer) unless the standard {@code OTEL_*}
 * environment names a trace exporter ({@code OTEL_TRACES_EXPORTER}, or an OTLP endpoint in
 * {@code OTEL_EXPORTER_OTLP_ENDPOINT} / {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT}); then the SDK's
 * autoconfiguration reads the rest ({@code OTEL_SERVICE_NAME}, the sampler, the batch processor,
 * headers...). Metrics and logs stay with Micrometer and Logback: only traces are exported.
 *
 * <p>Spans carry their parents explicitly (a {@link TraceContext} kept with the execution), never
 * through a thread's current context: one execution's steps run on different threads and nodes.
 */
public final class Tracing {

    private static final Logger LOG = LoggerFactory.getLogger(Tracing.class);
    private static final String SCOPE = "io.outrun";
    private static final Tracing OFF = new Tracing(OpenTelemetry.noop(), false, null);
    /** Read on every submit and claim: volatile, so the common path takes no lock. */
    private static volatile Tracing process;

    private final Tracer tracer;
    private final boolean on;
    private final OpenTelemetrySdk sdk;

    private Tracing(OpenTelemetry otel, boolean on, OpenTelemetrySdk sdk) {
        this.tracer = otel.getTracer(SCOPE);
        this.on = on;
        this.sdk = sdk;
    }

    /** No traces: spans are no-ops, and a caller's context is still passed on to the command. */
    public static Tracing off() {
        return OFF;
    }

    /** Traces made with {@code otel} (tests: the SDK with its in-memory exporter). */
    public static Tracing of(OpenTelemetry otel) {
        return new Tracing(otel, true, null);
    }

    /** This process's tracing, made from its environment at the first call. */
    public static Tracing process() {
        Tracing t = process;
        if (t != null) {
            return t;
        }
        synchronized (Tracing.class) {
            if (process == null) {
                process = fromEnvironment(System.getenv(), System::getProperty);
            }
            return process;
        }
    }

    /** Makes {@code tracing} this process's (tests, before the nodes that use it start); returns the previous. */
    public static synchronized Tracing install(Tracing tracing) {
        Tracing previous = process;
        process = tracing;
        return previous == null ? OFF : previous;
    }

    /**
     * On when {@code env} (or a system property, {@code otel.traces.exporter}...) names a trace
     * exporter and {@code OTEL_SDK_DISABLED} is not true. A configuration the SDK refuses (an
     * unknown exporter, a bad endpoint) is an operator's error: it stops the node at its start.
     */
    static Tracing fromEnvironment(Map<String, String> env, Function<String, String> properties) {
        Function<String, String> setting = name -> {
            String p = properties.apply(name.toLowerCase(Locale.ROOT).replace('_', '.'));
            return p != null ? p : env.get(name);
        };
        if ("true".equalsIgnoreCase(setting.apply("OTEL_SDK_DISABLED"))) {
            return OFF;
        }
        String exporter = setting.apply("OTEL_TRACES_EXPORTER");
        boolean endpoint = setting.apply("OTEL_EXPORTER_OTLP_ENDPOINT") != null
                || setting.apply("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != null;
        if (exporter == null ? !endpoint : exporter.isBlank() || exporter.strip().equals("none")) {
            return OFF;
        }
        Map<String, String> defaults = new HashMap<>();
        defaults.put("otel.service.name", "outrun");
        defaults.put("otel.metrics.exporter", "none");
        defaults.put("otel.logs.exporter", "none");
        // OTLP over HTTP with the JDK's client: the SDK's gRPC default would need OkHttp or gRPC-java.
        defaults.put("otel.exporter.otlp.protocol", "http/protobuf");
        OpenTelemetrySdk sdk;
        try {
            // No SDK shutdown hook: JVM hooks run concurrently, so it would stop the exporter while
            // the node's own hook still drains (the drained attempts' spans lost). The node's stop
            // closes it last (closeProcess).
            sdk = AutoConfiguredOpenTelemetrySdk.builder()
                    .addPropertiesSupplier(() -> defaults)
                    // Over the environment too: metrics and logs stay with Micrometer and Logback, so an
                    // OTEL_METRICS_EXPORTER set for other programs (prometheus...) neither stops the node
                    // nor starts an empty exporter.
                    .addPropertiesCustomizer(config -> Map.of("otel.metrics.exporter", "none", "otel.logs.exporter", "none"))
                    .disableShutdownHook()
                    .build()
                    .getOpenTelemetrySdk();
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new ConfigException("traces: the OTEL_* settings cannot be used (" + cause.getMessage()
                    + "); Outrun exports OTLP over HTTP (OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, the default)"
                    + " or to the console (OTEL_TRACES_EXPORTER=console), or set OTEL_TRACES_EXPORTER=none");
        }
        LOG.info("traces: exporting with {} (OTEL_* environment)", exporter != null ? exporter.strip() : "otlp");
        return new Tracing(sdk, true, sdk);
    }

    public boolean on() {
        return on;
    }

    public Tracer tracer() {
        return tracer;
    }

    /** The parent context of a span under {@code kept}; the root (a new trace) when null. */
    public Context parent(TraceContext kept) {
        if (kept == null) {
            return Context.root();
        }
        Map<String, String> headers = new HashMap<>();
        headers.put("traceparent", kept.traceparent());
        if (kept.tracestate() != null) {
            headers.put("tracestate", kept.tracestate());
        }
        return W3CTraceContextPropagator.getInstance().extract(Context.root(), headers, MapGetter.INSTANCE);
    }

    /**
     * What later spans (and the command) hang under: {@code span}'s context while this node
     * traces, else {@code fallback} (the caller's, or null).
     */
    public TraceContext keep(Span span, TraceContext fallback) {
        SpanContext c = span.getSpanContext();
        if (!on || !c.isValid()) {
            return fallback;
        }
        String parent = "00-" + c.getTraceId() + "-" + c.getSpanId() + "-" + c.getTraceFlags().asHex();
        return new TraceContext(parent, fallback == null ? null : fallback.tracestate());
    }

    /**
     * A step that happens at once, outside any attempt, in the execution's trace under
     * {@code kept}: the end of a queued execution its owner cancelled, or the sweep's re-drive or
     * reap of an attempt that lost its lease. Nothing when this node does not trace or the
     * execution has no trace.
     */
    public void mark(TraceContext kept, String name, UUID executionId, int attempt, String status) {
        if (!on || kept == null) {
            return;
        }
        tracer.spanBuilder(name).setParent(parent(kept))
                .setAttribute(AttemptTrace.EXECUTION_ID, executionId.toString())
                .setAttribute(AttemptTrace.ATTEMPT, (long) attempt)
                .setAttribute(AttemptTrace.STATUS, status).startSpan().end();
    }

    /**
     * Flushes and stops the exporter, 3 s at most: a collector that is down (the exporter retries
     * for about 8 s) must not hold a node's stop; what is not sent by then is dropped.
     */
    public void close() {
        if (sdk != null) {
            sdk.shutdown().join(3, TimeUnit.SECONDS);
        }
    }

    /** Closes this process's tracing if it was made: the last step of a node's stop, after its drain. */
    public static void closeProcess() {
        Tracing t = process;
        if (t != null) {
            t.close();
        }
    }

    private enum MapGetter implements TextMapGetter<Map<String, String>> {
        INSTANCE;

        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
            return List.copyOf(carrier.keySet());
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
            return carrier == null ? null : carrier.get(key);
        }
    }
}
