package io.outrun.core.trace;

import java.util.regex.Pattern;

/**
 * A W3C Trace Context as Outrun keeps it with an execution: the {@code traceparent} its later spans
 * hang under (the submit's span, or the caller's when this node does not trace) and the caller's
 * {@code tracestate}, passed on untouched. Kept as the header texts so that a node that does not
 * trace still passes the caller's trace on to the command.
 */
public record TraceContext(String traceparent, String tracestate) {

    /** Version 00: trace id (not all zeros), parent span id (not all zeros), flags. */
    private static final Pattern TRACEPARENT = Pattern.compile("00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}");
    /** The W3C limit is 32 list members; 512 characters is what a propagator must keep at least. */
    private static final int MAX_TRACESTATE = 512;

    /**
     * The context a caller sent, or null when {@code traceparent} is absent or malformed: the W3C
     * spec has a receiver ignore an invalid header and start a new trace rather than refuse the
     * request (a proxy's mangled header must not fail a submit). A tracestate without a valid
     * traceparent, or longer than 512 characters, is dropped the same way.
     */
    public static TraceContext parse(String traceparent, String tracestate) {
        if (traceparent == null) {
            return null;
        }
        String parent = traceparent.strip();
        if (!TRACEPARENT.matcher(parent).matches()) {
            return null;
        }
        String state = tracestate == null || tracestate.isBlank() || tracestate.length() > MAX_TRACESTATE
                ? null : tracestate.strip();
        return new TraceContext(parent, state);
    }

    /** The 32 hex digits of the trace id. */
    public String traceId() {
        return traceparent.substring(3, 35);
    }

    /** The same trace with another parent span (a span of this node's). */
    public TraceContext withParent(String newTraceparent) {
        return new TraceContext(newTraceparent, tracestate);
    }
}
