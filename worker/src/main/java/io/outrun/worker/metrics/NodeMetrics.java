package io.outrun.worker.metrics;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.outrun.core.execution.ExecutionStatus;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.EnumMap;
import java.util.Map;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * What one worker node knows about itself, for Prometheus: its slots and runs, how its runs
 * ended, hand-backs, leases it lost, the age of its last heartbeat, whether JobRunr's server is
 * up, and the JVM's memory, GC, threads and CPU. Every meter carries the tag {@code node}. The
 * fleet's view (queue, expired leases) is the API's {@code /metrics}; this is the node's.
 */
public final class NodeMetrics implements AutoCloseable {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final Map<ExecutionStatus, Counter> ended = new EnumMap<>(ExecutionStatus.class);
    private final Counter handbacks;
    private final Counter leasesLost;
    private final Counter sandboxLost;
    private final JvmGcMetrics gc = new JvmGcMetrics();
    private HttpServer server;
    /** Why this node cannot take work now, or null when it can; see {@link #readiness}. */
    private volatile Supplier<String> notReady = () -> "the node is starting";

    public NodeMetrics(String node) {
        registry.config().commonTags("node", node);
        for (ExecutionStatus status : ExecutionStatus.values()) {
            if (status.isTerminal()) {
                ended.put(status, Counter.builder("outrun.node.runs.ended").description("Runs of this node that ended, by status")
                        .tag("status", status.wire()).register(registry));
            }
        }
        handbacks = Counter.builder("outrun.node.handbacks").description("Executions handed back because the sandbox could not start them")
                .register(registry);
        leasesLost = Counter.builder("outrun.node.leases.lost").description("Runs killed because their lease was lost (re-driven elsewhere)")
                .register(registry);
        sandboxLost = Counter.builder("outrun.node.runs.lost").description("Runs ended from outside (the engine restarted,"
                + " an operator stopped the container): attempts lost, re-driven").register(registry);
        new JvmMemoryMetrics().bindTo(registry);
        gc.bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
    }

    /** A gauge read at every scrape. */
    public void gauge(String name, String help, DoubleSupplier value) {
        // Strong: a gauge holds its state weakly by default, and a lambda nobody else holds is soon collected.
        Gauge.builder(name, value, DoubleSupplier::getAsDouble).description(help).strongReference(true).register(registry);
    }

    /**
     * A counter kept by {@code state} (monotonic), read at every scrape; {@code tags} as key, value
     * pairs. Micrometer holds {@code state} weakly: pass an object its owner keeps, not a lambda.
     */
    public <T> void counter(String name, String help, T state, ToDoubleFunction<T> value, String... tags) {
        FunctionCounter.builder(name, state, value).description(help).tags(tags).register(registry);
    }

    /** This node wrote the end of a run. */
    public void ended(ExecutionStatus status) {
        Counter c = ended.get(status);
        if (c != null) {
            c.increment();
        }
    }

    public void handedBack() {
        handbacks.increment();
    }

    /** The engine or an operator ended a run (not the command): its attempt was lost. */
    public void sandboxLost() {
        sandboxLost.increment();
    }

    public void leaseLost() {
        leasesLost.increment();
    }

    public String scrape() {
        return registry.scrape();
    }

    /** What {@code GET /health} asks: why this node cannot take work now (e.g. no primary answers), or null when it can. */
    public void readiness(Supplier<String> why) {
        this.notReady = why;
    }

    /**
     * Serves {@code GET /metrics} and {@code GET /health} on {@code port} (all interfaces); 0
     * picks a free port. {@code /health} answers 200 {@code {"status":"ok"}} when the node can take
     * work, else 503 {@code {"status":"not_ready","database":"<why>"}} with Retry-After: a node cut
     * off from its database (during a failover: no primary answers) claims and renews nothing.
     */
    public int serve(int port) {
        try {
            server = HttpServer.create(new InetSocketAddress(port), 16);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot serve node metrics on port " + port, e);
        }
        server.createContext("/metrics", exchange -> {
            try (exchange) {
                if (!exchange.getRequestMethod().equals("GET")) {
                    exchange.sendResponseHeaders(405, -1);
                    return;
                }
                byte[] body = scrape().getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
                exchange.sendResponseHeaders(200, body.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            }
        });
        server.createContext("/health", exchange -> {
            try (exchange) {
                if (!exchange.getRequestMethod().equals("GET")) {
                    exchange.sendResponseHeaders(405, -1);
                    return;
                }
                String why = notReady.get();
                byte[] body = (why == null ? "{\"status\":\"ok\"}"
                        : "{\"status\":\"not_ready\",\"database\":\"" + jsonEscape(why) + "\"}").getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().set("Content-Type", "application/json");
                if (why != null) {
                    exchange.getResponseHeaders().set("Retry-After", "5");
                }
                exchange.sendResponseHeaders(why == null ? 200 : 503, body.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            }
        });
        server.start();
        return server.getAddress().getPort();
    }

    private static String jsonEscape(String s) {
        StringBuilder b = new StringBuilder(s.length() + 8);
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    @Override
    public void close() {
        if (server != null) {
            server.stop(0);
        }
        gc.close();
        registry.close();
    }
}
