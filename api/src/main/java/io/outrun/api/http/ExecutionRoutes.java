package io.outrun.api.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.http.Context;
import io.outrun.client.wire.ExecutionPage;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.OutputChunk;
import io.outrun.client.wire.ProgressView;
import io.outrun.client.wire.StdinView;
import io.outrun.client.wire.StdinWritten;
import io.outrun.client.wire.StreamDelta;
import io.outrun.core.books.ProgressOnDashboard;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.files.FilesConfig;
import io.outrun.core.schedule.Schedules;
import io.outrun.core.secrets.SecretStore;
import io.outrun.core.service.ExecutionService;
import io.outrun.core.store.Outage;
import io.outrun.core.store.OutputStore;
import io.outrun.core.store.ProgressStore;
import io.outrun.core.store.StdinStore;
import io.outrun.core.store.SubmissionStore.CancelResult;
import io.outrun.core.store.SubmissionStore.Inserted;
import io.outrun.core.store.SubmissionStore;
import io.outrun.core.trace.TraceContext;
import java.io.IOException;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/** The handlers of {@code /v1/executions}: every one is scoped to the caller's owner. */
final class ExecutionRoutes {

    private static final int DEFAULT_LIMIT = 20;
    private static final int MAX_LIMIT = 100;

    private final ApiConfig config;
    private final ExecutionService service;
    private final SubmissionParser parser;
    private final SubmitChecks checks;
    private final ExecutionListing listing;
    private final Views views;
    private final Guidance guidance;
    private final Waiter waiter;
    private final EventStream events;

    private final int submitBodyBytes;
    private final SecretStore secrets;
    private final WebhookRoutes webhooks;
    private final ProgressStore progress;
    private final ProgressOnDashboard dashboard;

    ExecutionRoutes(ApiConfig config, ExecutionService service, ExecutionListing listing, Waiter waiter,
                    FilesConfig files, SecretStore secrets, WebhookRoutes webhooks,
                    ProgressStore progress, Supplier<String> publicUrl) {
        this.config = config;
        this.webhooks = webhooks;
        this.progress = progress;
        this.dashboard = new ProgressOnDashboard(service.books());
        this.secrets = secrets;
        this.service = service;
        this.parser = new SubmissionParser(config, files).withPublicUrl(publicUrl);
        this.checks = new SubmitChecks(config, service, secrets, webhooks);
        this.submitBodyBytes = files.submitBodyBytes(config.maxBodyBytes());
        this.listing = listing;
        this.guidance = new Guidance(config);
        this.views = new Views(guidance);
        this.waiter = waiter;
        this.events = new EventStream(waiter);
    }

    void submit(Context ctx) {
        String owner = ApiServer.owner(ctx);
        OutputMode mode = OutputMode.parse(ctx.queryParam("output"));
        requireJson(ctx.header("Content-Type"));
        SubmissionParser.Parsed parsed = parser.parse(BodyReader.read(ctx, submitBodyBytes), owner,
                ctx.header("Idempotency-Key"));
        Submission submission = checks.asChild(ApiServer.run(ctx), parsed);
        checks.requireSubmittable(owner, submission);
        // A W3C traceparent joins the caller's trace (a malformed one starts a new trace, as the spec says).
        Inserted inserted = service.submit(submission,
                TraceContext.parse(ctx.header("traceparent"), ctx.header("tracestate")));
        Execution e = inserted.execution();
        if (!inserted.created()) {
            SubmitChecks.requireSameRequest(e, submission);
            ctx.header("Idempotent-Replayed", "true");
        }
        Execution shown = e;
        if (parsed.waitMs() > 0 && !e.status().isTerminal()) {
            try {
                shown = parsed.waitForOutput() ? untilOutput(e.id(), owner, parsed.waitMs())
                        : untilEnd(e.id(), owner, parsed.waitMs());
            } catch (RuntimeException failure) {
                if (!Outage.is(failure)) {
                    throw failure;
                }
                // Stored already: answering 503 ("not accepted") would invite a resubmit that runs it twice.
                shown = e;
            }
        }
        ctx.header("Location", "/v1/executions/" + e.id());
        // Only a submission that names a workspace can wait for one: no query for the others.
        ApiServer.json(ctx, shown.status().isTerminal() ? 200 : 202, view(ctx, shown, mode,
                        submission.inputs().workspace() != null)
                .withWaitMsClamped(parsed.waitMsClamped()));
    }




    /**
     * {@code POST /v1/executions/{id}/progress} (issue 31): the run's own token only (RunScope has
     * checked it is this run's and its attempt runs). At most one per {@link #PROGRESS_EVERY_MS}
     * per execution on this node: a loop reporting faster is told to slow down, not stored.
     */
    void progress(Context ctx) {
        RunScope.Allowed run = ApiServer.run(ctx);
        if (run == null) {
            throw new ApiError(403, "run_token_required", "Progress is reported by the run itself, with its run token"
                    + " ($OUTRUN_API_TOKEN); an owner token cannot report it.",
                    "From inside the run: curl -X POST \"$OUTRUN_API/v1/executions/$OUTRUN_EXECUTION_ID/progress\""
                            + " -H \"Authorization: Bearer $OUTRUN_API_TOKEN\" -H 'Content-Type: application/json' -d '{\"percent\": 40}'.");
        }
        requireJson(ctx.header("Content-Type"));
        JsonNode body = ProgressBody.read(BodyReader.read(ctx, 4096));
        Integer percent = ProgressBody.percent(body);
        String message = ProgressBody.message(body);
        UUID id = run.run().executionId();
        long now = System.nanoTime();
        Long last = lastProgress.get(id);
        if (last != null && now - last < PROGRESS_EVERY_MS * 1_000_000L) {
            throw new ApiError(429, "progress_too_fast", "This run reported progress less than " + PROGRESS_EVERY_MS
                    + " ms ago; this report was not kept.", "Report at most a few times a second; only the latest is kept.");
        }
        if (lastProgress.size() > 10_000) {
            lastProgress.clear(); // bounded: a reset lets each run report once more
        }
        lastProgress.put(id, now);
        Instant at = progress.report(id, run.run().owner(), run.run().attempt(), run.run().leaseEpoch(), percent, message)
                .orElseThrow(() -> RunScope.ended(run.run()));
        dashboard.report(run.jobId(), percent, message);
        ApiServer.json(ctx, 200, new ProgressView(percent, message, at));
    }

    static final long PROGRESS_EVERY_MS = 250;
    private final ConcurrentHashMap<UUID, Long> lastProgress = new ConcurrentHashMap<>();





    /** Stops the thread that shows progress on the dashboard. */
    void close() {
        dashboard.close();
    }

    /** {@code POST /v1/executions/batch}, whose submissions are parsed and checked as this submit's. */
    BatchRoutes batch() {
        return new BatchRoutes(config, service, parser, checks, views);
    }

    /** The routes of an owner's schedules, whose submissions are checked as this submit checks one. */
    ScheduleRoutes schedules(Schedules schedules) {
        return new ScheduleRoutes(schedules, parser, checks::requireSubmittable, submitBodyBytes);
    }

    void get(Context ctx) {
        String owner = ApiServer.owner(ctx);
        UUID id = id(ctx);
        long waitMs = waitMs(ctx);
        OutputMode mode = OutputMode.parse(ctx.queryParam("output"));
        Execution e = load(id, owner);
        if (waitMs > 0 && !e.status().isTerminal()) {
            e = untilEnd(id, owner, waitMs);
        }
        ApiServer.json(ctx, 200, view(ctx, e, mode).withWaitMsClamped(clamped(ctx, waitMs)));
    }

    void output(Context ctx) {
        String owner = ApiServer.owner(ctx);
        UUID id = id(ctx);
        OutputCursor cursor = OutputCursor.decode(ctx.queryParam("cursor"));
        long waitMs = waitMs(ctx);
        long maxBytes = longParam(ctx, "maxBytes", MIN_PAGE_BYTES, Long.MAX_VALUE);
        Channel ch = Channel.of(ctx);
        OutputChunk chunk = waiter.await(owner, id, waitMs, () -> chunk(sinceCursor(id, owner, cursor), cursor, maxBytes, ch),
                c -> c.done() || c.restarted() || !c.stdout().text().isEmpty() || !c.stderr().text().isEmpty());
        ApiServer.json(ctx, 200, chunk.withWaitMsClamped(clamped(ctx, waitMs)));
    }

    /**
     * The execution as server-sent events ({@link EventStream}), from {@code Last-Event-ID} (what
     * an EventSource sends when it reconnects) or {@code ?cursor=}, else from the start. Errors
     * (unknown execution, bad cursor, no free place) answer JSON before the stream starts.
     */
    void events(Context ctx) throws IOException {
        String owner = ApiServer.owner(ctx);
        UUID id = id(ctx);
        String resume = ctx.header("Last-Event-ID");
        OutputCursor cursor = OutputCursor.decode(resume != null && !resume.isBlank() ? resume.strip() : ctx.queryParam("cursor"));
        load(id, owner); // 404 before the stream starts
        Waiter.Place place = waiter.hold(owner);
        if (place == null) {
            throw new ApiError(429, "too_many_waiting", "This node holds as many waiting requests and event streams as"
                    + " it may (of all owners, or of yours).", ch -> "Close another stream, or poll "
                    + ch.show(id) + " instead; try again in a few seconds.");
        }
        ctx.status(200).contentType("text/event-stream; charset=utf-8").header("Cache-Control", "no-store")
                .header("X-Accel-Buffering", "no");
        try {
            events.stream(ctx.res().getOutputStream(), place, id, cursor, c -> sinceCursor(id, owner, c));
        } catch (IOException gone) {
            // The client left: nothing to answer.
        }
    }

    /**
     * Appends to the command's stdin. The answer carries the output cursor from before the write,
     * so that reading from it gives what the command printed in answer.
     */
    void stdin(Context ctx) {
        String owner = ApiServer.owner(ctx);
        UUID id = id(ctx);
        requireJson(ctx.header("Content-Type"));
        StdinParser.Write write = StdinParser.parse(BodyReader.read(ctx, StdinParser.MAX_BODY_BYTES));
        Execution before = service.get(id, owner, OutputStore.Read.NONE).orElseThrow(() -> ApiError.notFound(id.toString()));
        String cursor = new OutputCursor(before.outputEpoch(), before.stdout().totalBytes(), before.stderr().totalBytes())
                .encode();
        StdinStore.Written w = service.writeStdin(id, owner, write.bytes(), write.eof());
        switch (w.result()) {
            case WRITTEN -> {
                long total = w.offset() + write.bytes().length;
                ApiServer.json(ctx, 200, new StdinWritten(id.toString(), write.bytes().length, w.offset(),
                        new StdinView(before.stdin().mode().wire(), total, write.eof()), cursor,
                        guidance.forStdinWrite(id, write.eof(), cursor, Channel.of(ctx))));
            }
            case NOT_FOUND -> throw ApiError.notFound(id.toString());
            case NOT_OPEN -> throw new ApiError(409, "stdin_not_open", "Execution " + id + " was submitted without stdin"
                    + " open: its command reads /dev/null.", ch -> "Submit the command again with " + ch.field("stdin")
                    + " true (or " + ch.field("tty") + " true for a terminal) to write to it while it runs.");
            case FINISHED -> throw new ApiError(409, "execution_finished", "Execution " + id + " already ended as "
                    + w.status().wire() + "; its stdin takes nothing more.", ch -> ch.show(id) + " shows its result.");
            case CLOSED -> throw new ApiError(409, "stdin_closed", "The stdin of execution " + id + " was closed (a write"
                    + " sent eof) after " + w.stdin().bytes() + " bytes; nothing more is taken.",
                    "The command has read end of file. Submit a new execution to send it more input.");
            case TOO_LARGE -> throw new ApiError(413, "stdin_too_large", "The stdin of execution " + id + " holds "
                    + w.stdin().bytes() + " bytes; with this write it would exceed " + StdinStore.MAX_TOTAL_BYTES
                    + " bytes.", ch -> "Pass large inputs as " + ch.field("files") + " or a " + ch.field("workspace")
                    + " instead of stdin.");
        }
    }

    void cancel(Context ctx) {
        String owner = ApiServer.owner(ctx);
        UUID id = id(ctx);
        OutputMode mode = OutputMode.parse(ctx.queryParam("output"));
        CancelResult result = service.cancel(id, owner);
        if (result == CancelResult.NOT_FOUND) {
            throw ApiError.notFound(id.toString());
        }
        Execution e = load(id, owner);
        if (result == CancelResult.ALREADY_TERMINAL && e.status() != ExecutionStatus.CANCELLED) {
            throw new ApiError(409, "execution_finished", "Execution " + id + " already ended as " + e.status().wire()
                    + "; there is nothing to cancel.", ch -> ch.show(id) + " shows its result.");
        }
        ApiServer.json(ctx, result == CancelResult.REQUESTED ? 202 : 200, view(ctx, e, mode));
    }

    void list(Context ctx) {
        String owner = ApiServer.owner(ctx);
        ExecutionStatus status = null;
        String statusParam = ctx.queryParam("status");
        if (statusParam != null && !statusParam.isEmpty()) {
            try {
                status = ExecutionStatus.fromWire(statusParam);
            } catch (IllegalArgumentException e) {
                throw ApiError.invalid("status", "must be one of queued, running, succeeded, failed, timed_out, cancelled");
            }
        }
        int limit = (int) Math.min(longParam(ctx, "limit", 1, DEFAULT_LIMIT), MAX_LIMIT);
        Map<String, String> labels = new LinkedHashMap<>();
        for (String label : ctx.queryParams("label")) {
            int eq = label.indexOf('=');
            if (eq < 1 || label.length() > 400 || label.indexOf('\0') >= 0) {
                throw ApiError.invalid("label", "must be key=value, e.g. label=task%3Dbuild-42, got: "
                        + (label.length() > 40 ? label.substring(0, 40) + "…" : label));
            }
            labels.put(label.substring(0, eq), label.substring(eq + 1));
        }
        RunScope.Allowed run = ApiServer.run(ctx);
        if (run != null) {
            // A run lists its own children only.
            labels.put(SubmissionParser.PARENT_LABEL, run.run().executionId().toString());
        }
        ExecutionPage page = listing.page(owner, status, labels, limit, ListCursor.decode(ctx.queryParam("after")));
        ApiServer.json(ctx, 200, page);
    }

    /** The output after {@code cursor}, at most {@code maxBytes} bytes of each stream; {@code more} when some were left for the next page. */
    private OutputChunk chunk(Execution e, OutputCursor cursor, long maxBytes, Channel ch) {
        // A retried attempt starts its output from zero: a cursor of an older attempt starts over.
        boolean restarted = cursor.epoch() != 0 && cursor.epoch() != e.outputEpoch();
        OutputCursor from = cursor.epoch() == e.outputEpoch() ? cursor : new OutputCursor(e.outputEpoch(), 0, 0);
        boolean complete = e.status().isTerminal();
        OutputSlicer.Slice out = OutputSlicer.since(e.stdout(), from.stdout(), complete, maxBytes);
        OutputSlicer.Slice err = OutputSlicer.since(e.stderr(), from.stderr(), complete, maxBytes);
        String next = new OutputCursor(e.outputEpoch(), out.next(), err.next()).encode();
        boolean more = out.more() || err.more();
        boolean done = complete && !more;
        return new OutputChunk(e.id().toString(), e.status().wire(), e.attempt(), restarted,
                new StreamDelta(out.text(), out.droppedBytes(), e.stdout().totalBytes()),
                new StreamDelta(err.text(), err.droppedBytes(), e.stderr().totalBytes()),
                next, done, more, e.exitCode(), guidance.forOutput(e, done, more, next, ch));
    }

    /**
     * Waits for the end re-reading only the state (a wake-up comes with every output flush, and
     * the row carries the output), then reads the whole execution once.
     */
    private Execution untilEnd(UUID id, String owner, long waitMs) {
        waiter.await(owner, id, waitMs, () -> service.status(id, owner)
                .orElseThrow(() -> ApiError.notFound(id.toString())), ExecutionStatus::isTerminal);
        return load(id, owner);
    }

    /** A reader after its cursor loads only the stored chunks after it; a cursor of another run starts over. */
    private Execution sinceCursor(UUID id, String owner, OutputCursor cursor) {
        if (cursor.epoch() == 0) {
            return load(id, owner);
        }
        Execution e = service.get(id, owner, OutputStore.Read.since(cursor.stdout(), cursor.stderr()))
                .orElseThrow(() -> ApiError.notFound(id.toString()));
        return e.outputEpoch() == cursor.epoch() ? e : load(id, owner);
    }

    /**
     * Waits for the first output or the end. Each wake-up re-reads only the state and byte counts
     * (no output bytes); the whole execution is read once, when the wait ends.
     */
    private Execution untilOutput(UUID id, String owner, long waitMs) {
        waiter.await(owner, id, waitMs, () -> service.get(id, owner, OutputStore.Read.NONE)
                .orElseThrow(() -> ApiError.notFound(id.toString())), e -> e.status().isTerminal()
                || e.stdout().totalBytes() > 0 || e.stderr().totalBytes() > 0);
        return load(id, owner);
    }

    /**
     * The execution as the caller's channel reads it; a queued one waiting for its workspace
     * names the run that holds it.
     */
    private ExecutionView view(Context ctx, Execution e, OutputMode mode) {
        return view(ctx, e, mode, true);
    }

    /** {@code mayWait}: false when the execution is known to name no workspace (its submit). */
    private ExecutionView view(Context ctx, Execution e, OutputMode mode, boolean mayWait) {
        SubmissionStore.WorkspaceHeld held = mayWait && e.status() == ExecutionStatus.QUEUED
                ? service.workspaceHolder(e.id(), e.owner()).orElse(null) : null;
        return views.of(e, mode, Channel.of(ctx), held);
    }

    private Execution load(UUID id, String owner) {
        return service.get(id, owner).orElseThrow(() -> ApiError.notFound(id.toString()));
    }

    /** The smallest page of output a caller may ask for: one character of any width, with room to spare. */
    static final long MIN_PAGE_BYTES = 16;

    private long waitMs(Context ctx) {
        return Math.min(longParam(ctx, "waitMs", 0, 0), config.maxWaitMs());
    }

    /** The wait used when the query's waitMs was above the server's maximum, else null. */
    private static Long clamped(Context ctx, long used) {
        String raw = ctx.queryParam("waitMs");
        if (raw == null || raw.isEmpty()) {
            return null;
        }
        try {
            return Long.parseLong(raw) > used ? used : null;
        } catch (NumberFormatException e) {
            return used; // beyond 64 bits: clamped
        }
    }



    /**
     * The body must be sent as JSON. A missing Content-Type is taken as JSON (a bare client);
     * any other type (curl's -d sends a form) answers 415 with the fix.
     */
    static void requireJson(String contentType) {
        if (contentType == null || contentType.isBlank()) {
            return;
        }
        String type = contentType.split(";", 2)[0].strip().toLowerCase(Locale.ROOT);
        if (type.equals("application/json") || (type.startsWith("application/") && type.endsWith("+json"))) {
            return;
        }
        throw new ApiError(415, "unsupported_media_type", "The body was sent as " + (type.length() > 80
                ? type.substring(0, 80) + "…" : type) + "; this route takes a JSON object (application/json).",
                "Send the header Content-Type: application/json (with curl: -H 'Content-Type: application/json').");
    }

    /** Malformed ids answer like missing ones: nothing about ids leaks through the error. */
    static UUID id(Context ctx) {
        String raw = ctx.pathParam("id");
        try {
            if (raw.length() == 36) {
                return UUID.fromString(raw);
            }
        } catch (IllegalArgumentException ignored) {
            // Falls through to not found.
        }
        throw ApiError.notFound(raw.length() > 64 ? raw.substring(0, 64) + "…" : raw);
    }

    private static long longParam(Context ctx, String name, long min, long fallback) {
        String raw = ctx.queryParam(name);
        if (raw == null || raw.isEmpty()) {
            return fallback;
        }
        long value;
        try {
            value = Long.parseLong(raw);
        } catch (NumberFormatException e) {
            throw ApiError.invalid(name, "must be an integer, got: " + (raw.length() > 40 ? raw.substring(0, 40) + "…" : raw));
        }
        if (value < min) {
            throw ApiError.invalid(name, "must be at least " + min + ", got: " + value);
        }
        return value;
    }
}
