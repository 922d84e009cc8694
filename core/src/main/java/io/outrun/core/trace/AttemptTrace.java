package io.outrun.core.trace;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The spans of one attempt, on the node that claimed it, all in the execution's trace (under the
 * submit's span, kept with the row): {@code execution.queue_wait} (from when the row became
 * claimable to the claim), {@code execution.claim} (the claim statement), then
 * {@code execution.attempt}, which holds {@code sandbox.start}, {@code execution.command},
 * {@code output.flush} (sampled), {@code artifacts.save}, {@code workspace.save} and
 * {@code execution.end}. The command's {@code TRACEPARENT} names the attempt's span.
 * Thread-safe: the run, the heartbeat's flush and the end use it from their own threads.
 */
public final class AttemptTrace {

    public static final AttributeKey<String> EXECUTION_ID = AttributeKey.stringKey("outrun.execution.id");
    public static final AttributeKey<String> OWNER = AttributeKey.stringKey("outrun.owner");
    public static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("outrun.attempt");
    public static final AttributeKey<String> NODE = AttributeKey.stringKey("outrun.node");
    public static final AttributeKey<String> STATUS = AttributeKey.stringKey("outrun.status");
    public static final AttributeKey<Long> EXIT_CODE = AttributeKey.longKey("outrun.exit_code");
    public static final AttributeKey<String> ERROR_CODE = AttributeKey.stringKey("outrun.error_code");
    public static final AttributeKey<Long> BYTES = AttributeKey.longKey("outrun.bytes");

    /** One flush span per this many nanoseconds of a run at most (the first flush always has one). */
    private static final long FLUSH_SAMPLE_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final Tracing tracing;
    private final Span attempt;
    private final Context inAttempt;
    private final TraceContext forCommand;
    private final String node;
    private final String executionId;
    private final long attemptNumber;
    private long lastFlushSpanNanos;
    private boolean flushed;
    private final AtomicBoolean ended = new AtomicBoolean();

    private AttemptTrace(Tracing tracing, Span attempt, TraceContext forCommand, String node, UUID executionId,
                         int attemptNumber) {
        this.tracing = tracing;
        this.executionId = executionId == null ? null : executionId.toString();
        this.attemptNumber = attemptNumber;
        this.attempt = attempt;
        this.inAttempt = Context.root().with(attempt);
        this.forCommand = forCommand;
        this.node = node;
    }

    /** No spans; the command still gets the caller's context ({@code kept}, may be null). */
    public static AttemptTrace none(TraceContext kept) {
        return new AttemptTrace(Tracing.off(), Span.getInvalid(), kept, null, null, 0);
    }

    /**
     * Records the wait and the claim (their times passed in: {@code queuedAt} by the database's
     * clock, the claim's by this node's {@link System#nanoTime()}) and starts the attempt's span.
     */
    public static AttemptTrace begin(Tracing tracing, TraceContext kept, UUID executionId, String owner, int attempt,
                                     String node, Instant queuedAt, long claimSentNanos, long claimEndNanos) {
        if (!tracing.on()) {
            return none(kept);
        }
        Context parent = tracing.parent(kept);
        Instant sent = instantOf(claimSentNanos);
        Instant claimed = instantOf(claimEndNanos);
        // The database's clock and this node's may differ a little: the wait never ends before it began.
        Instant waitFrom = queuedAt == null || queuedAt.isAfter(sent) ? sent : queuedAt;
        Span span = tag(tracing.tracer().spanBuilder("execution.attempt").setParent(parent)
                .setStartTimestamp(claimed), executionId, owner, attempt, node).startSpan();
        // No kept context (its submit was not traced: an API node without traces, a row from before
        // V22): the wait and the claim join the attempt's new trace rather than each start one.
        Context around = kept == null ? Context.root().with(span) : parent;
        tag(tracing.tracer().spanBuilder("execution.queue_wait").setParent(around)
                .setStartTimestamp(waitFrom), executionId, owner, attempt, node).startSpan().end(sent);
        tag(tracing.tracer().spanBuilder("execution.claim").setParent(around)
                .setStartTimestamp(sent), executionId, owner, attempt, node).startSpan().end(claimed);
        return new AttemptTrace(tracing, span, tracing.keep(span, kept), node, executionId, attempt);
    }

    private static SpanBuilder tag(SpanBuilder b, UUID executionId, String owner, int attempt, String node) {
        return b.setAttribute(EXECUTION_ID, executionId.toString()).setAttribute(OWNER, owner)
                .setAttribute(ATTEMPT, (long) attempt).setAttribute(NODE, node);
    }

    /** {@link System#nanoTime()} as a wall-clock instant. */
    static Instant instantOf(long nanoTime) {
        return Instant.now().minusNanos(System.nanoTime() - nanoTime);
    }

    /** What the command's {@code TRACEPARENT} / {@code TRACESTATE} say; null: no trace to join. */
    public TraceContext forCommand() {
        return forCommand;
    }

    /** A step of the attempt, started now; its caller ends it. */
    public Span step(String name) {
        return stepOf(name).startSpan();
    }

    private SpanBuilder stepOf(String name) {
        return tracing.tracer().spanBuilder(name).setParent(inAttempt).setAttribute(EXECUTION_ID, executionId)
                .setAttribute(ATTEMPT, attemptNumber).setAttribute(NODE, node);
    }

    /** A step that failed: marked so, with the exception's text. */
    public static void failed(Span step, Throwable why) {
        step.recordException(why);
        step.setStatus(StatusCode.ERROR, why.toString());
    }

    /**
     * An output flush that wrote {@code bytes} for this attempt, between those nanoTimes: a span for
     * the first and then at most one per 10 s (a chatty run flushes every 200 ms).
     */
    public void flushed(long startNanos, long endNanos, long bytes) {
        if (!tracing.on()) {
            return;
        }
        synchronized (this) {
            if (flushed && endNanos - lastFlushSpanNanos < FLUSH_SAMPLE_NANOS) {
                return;
            }
            flushed = true;
            lastFlushSpanNanos = endNanos;
        }
        stepOf("output.flush").setAttribute(BYTES, bytes).setStartTimestamp(instantOf(startNanos)).startSpan().end(instantOf(endNanos));
    }

    /**
     * Ends the attempt's span as the attempt ended ({@code status}: the execution's, or how it
     * left); only the first call counts.
     */
    public void end(String status, Integer exitCode, String errorCode) {
        if (!ended.compareAndSet(false, true)) {
            return;
        }
        attempt.setAttribute(STATUS, status);
        if (exitCode != null) {
            attempt.setAttribute(EXIT_CODE, (long) exitCode);
        }
        if (errorCode != null) {
            attempt.setAttribute(ERROR_CODE, errorCode);
            attempt.setStatus(StatusCode.ERROR, errorCode);
        }
        attempt.end();
    }
}
