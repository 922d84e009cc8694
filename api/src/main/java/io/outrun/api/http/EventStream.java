package io.outrun.api.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outrun.client.wire.Json;
import io.outrun.core.execution.Execution;
import io.outrun.model.output.Captured;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.function.Function;

/**
 * {@code GET /v1/executions/{id}/events} (issue 28): an execution as server-sent events.
 * {@code status} on connecting and on each change of state or attempt, {@code output} for each
 * stream's new text, {@code end} once it ended and all its output was sent. Every event's
 * {@code id} is the output cursor after it, so an EventSource that reconnects (it sends
 * {@code Last-Event-ID}) resumes exactly where it stopped: no byte twice, none missed. A stream
 * lasts at most {@link #MAX_STREAM_MS}, then closes without {@code end} and the client reconnects.
 */
final class EventStream {

    static final long MAX_STREAM_MS = 10 * 60_000L;
    private static final long KEEP_ALIVE_MS = 15_000L;
    /** Output per event: a big backlog goes out as several events, each resumable. */
    private static final long MAX_EVENT_BYTES = 64 * 1024;
    private static final ObjectMapper JSON = Json.mapper();

    private final Waiter waiter;

    EventStream(Waiter waiter) {
        this.waiter = waiter;
    }

    /**
     * Streams from {@code cursor} on; {@code read} gives the execution with its output after a
     * cursor. Returns when the execution ended, the stream's time is over, or the client left.
     */
    void stream(OutputStream out, Waiter.Place place, UUID id, OutputCursor cursor, Function<OutputCursor, Execution> read)
            throws IOException {
        try (place) {
            write(out, "retry: 2000\n\n");
            long deadline = System.nanoTime() + MAX_STREAM_MS * 1_000_000L;
            String shown = null; // status and attempt last sent
            OutputCursor at = cursor;
            while (System.nanoTime() - deadline < 0) {
                OutputCursor from = at;
                String[] seen = {shown};
                // Woken only by something to send: bytes stored but not yet sendable (half a UTF-8
                // character) are no news, or the loop would read again at once until they are.
                Execution e = waiter.poll(id, KEEP_ALIVE_MS, () -> read.apply(from), x -> x.status().isTerminal()
                        || !(x.status().wire() + "/" + x.attempt()).equals(seen[0]) || x.outputEpoch() != from.epoch()
                        || sendable(x.stdout(), from.stdout()) || sendable(x.stderr(), from.stderr()));
                boolean complete = e.status().isTerminal();
                // A new attempt starts its output from zero; a cursor of an older one starts over.
                OutputCursor base = from.epoch() == e.outputEpoch() ? from : new OutputCursor(e.outputEpoch(), 0, 0);
                String state = e.status().wire() + "/" + e.attempt();
                if (!state.equals(shown)) {
                    ObjectNode d = JSON.createObjectNode().put("status", e.status().wire()).put("attempt", e.attempt());
                    write(out, event("status", base, d));
                    shown = state;
                }
                OutputSlicer.Slice o = OutputSlicer.since(e.stdout(), base.stdout(), complete, MAX_EVENT_BYTES);
                OutputCursor afterOut = new OutputCursor(base.epoch(), o.next(), base.stderr());
                if (!o.text().isEmpty() || o.droppedBytes() > 0) {
                    write(out, event("output", afterOut, output("stdout", o)));
                }
                OutputSlicer.Slice r = OutputSlicer.since(e.stderr(), base.stderr(), complete, MAX_EVENT_BYTES);
                at = new OutputCursor(base.epoch(), o.next(), r.next());
                if (!r.text().isEmpty() || r.droppedBytes() > 0) {
                    write(out, event("output", at, output("stderr", r)));
                }
                if (complete && !o.more() && !r.more()) {
                    ObjectNode d = JSON.createObjectNode().put("status", e.status().wire()).put("attempt", e.attempt());
                    d.putPOJO("exitCode", e.exitCode());
                    if (e.errorCode() != null) {
                        d.putObject("error").put("code", e.errorCode()).put("message", e.errorMessage());
                    }
                    write(out, event("end", at, d));
                    return;
                }
                if (at.equals(from) && state.equals(seen[0])) {
                    write(out, ": keep-alive\n\n"); // also how a client that left is noticed
                }
            }
        }
    }

    /** Whether {@code c} holds output after {@code from} that a running execution's event can carry. */
    private static boolean sendable(Captured c, long from) {
        OutputSlicer.Slice s = OutputSlicer.since(c, from, false, 4); // one whole character is enough to know
        return !s.text().isEmpty() || s.droppedBytes() > 0;
    }

    private static ObjectNode output(String stream, OutputSlicer.Slice s) {
        ObjectNode d = JSON.createObjectNode().put("stream", stream).put("text", s.text());
        if (s.droppedBytes() > 0) {
            d.put("droppedBytes", s.droppedBytes()); // beyond the kept head and tail: never stored
        }
        return d;
    }

    private static String event(String name, OutputCursor id, ObjectNode data) {
        // One line of JSON: its newlines are escaped, so a data line never breaks.
        return "event: " + name + "\nid: " + id.encode() + "\ndata: " + data + "\n\n";
    }

    private static void write(OutputStream out, String text) throws IOException {
        out.write(text.getBytes(StandardCharsets.UTF_8));
        out.flush();
    }
}
