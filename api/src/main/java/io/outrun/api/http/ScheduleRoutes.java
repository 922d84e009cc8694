package io.outrun.api.http;

import com.fasterxml.jackson.databind.JsonNode;
import io.javalin.http.Context;
import io.outrun.core.execution.Submission;
import io.outrun.client.wire.Json;
import io.outrun.core.schedule.CatchUp;
import io.outrun.core.schedule.Schedules;
import io.outrun.core.store.ScheduleStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.ZoneId;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * {@code /v1/schedules} (issue 28): an owner's recurring schedules, made, listed and deleted.
 * The submission inside is checked as a submit is, once, when the schedule is made; a firing
 * runs it as it was accepted, labelled {@code schedule=<name>}.
 */
final class ScheduleRoutes {

    private static final Set<String> FIELDS = Set.of("name", "cron", "everyMs", "timezone", "overlap", "catchUp",
            "catchUpWindowMs", "submission");
    /** A day: a nightly job missed by an outage still runs; one missed last week does not. */
    static final long DEFAULT_CATCH_UP_WINDOW_MS = 24L * 3600 * 1000;
    static final long MAX_CATCH_UP_WINDOW_MS = 7L * 24 * 3600 * 1000;

    /** A schedule's submission is kept with it (files included): small, so that 100 schedules stay small. */
    static final int MAX_SUBMISSION_BYTES = 256 * 1024;

    private final Schedules schedules;
    private final SubmissionParser parser;
    private final BiConsumer<String, Submission> submittable;
    private final int maxBodyBytes;

    ScheduleRoutes(Schedules schedules, SubmissionParser parser, BiConsumer<String, Submission> submittable, int maxBodyBytes) {
        this.schedules = schedules;
        this.parser = parser;
        this.submittable = submittable;
        this.maxBodyBytes = maxBodyBytes;
    }

    void create(Context ctx) {
        String owner = ApiServer.owner(ctx);
        ExecutionRoutes.requireJson(ctx.header("Content-Type"));
        JsonNode root = read(BodyReader.read(ctx, maxBodyBytes));
        String name = JsonFields.string(root, "name", 64);
        if (name == null || !name.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,63}")) {
            throw ApiError.invalid("name", "is required: 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit");
        }
        String cron = JsonFields.string(root, "cron", 200);
        Long everyMs = root.has("everyMs") ? everyMs(root.get("everyMs")) : null;
        if ((cron == null) == (everyMs == null)) {
            throw ApiError.invalid("cron", "give exactly one of `cron` (\"0 * * * *\": minute hour day month weekday,"
                    + " or with seconds first) and `everyMs` (at least 5000)");
        }
        ZoneId zone;
        String tz = JsonFields.string(root, "timezone", 64);
        try {
            zone = tz == null ? ZoneId.of("UTC") : ZoneId.of(tz);
        } catch (DateTimeException e) {
            throw ApiError.invalid("timezone", "is not a time zone such as UTC or Europe/Paris");
        }
        String overlap = JsonFields.string(root, "overlap", 16);
        if (overlap == null) {
            overlap = "skip";
        } else if (!overlap.equals("skip") && !overlap.equals("queue")) {
            throw ApiError.invalid("overlap", "must be skip (a firing while the previous one is queued or running runs"
                    + " nothing) or queue (it runs after it)");
        }
        CatchUp catchUp = catchUp(JsonFields.string(root, "catchUp", 16));
        long window = DEFAULT_CATCH_UP_WINDOW_MS;
        if (root.hasNonNull("catchUpWindowMs")) {
            JsonNode w = root.get("catchUpWindowMs");
            if (!w.isIntegralNumber() || !w.canConvertToLong() || w.asLong() < 1000 || w.asLong() > MAX_CATCH_UP_WINDOW_MS) {
                throw ApiError.invalid("catchUpWindowMs", "must be an integer from 1000 to " + MAX_CATCH_UP_WINDOW_MS
                        + " (7 days): how far back missed firings are made up for (default a day)");
            }
            window = w.asLong();
        }
        JsonNode body = root.get("submission");
        if (body == null || !body.isObject()) {
            throw ApiError.invalid("submission", "is required: the body of a submit, such as {\"command\": \"make nightly\"}");
        }
        byte[] submissionBytes = body.toString().getBytes(StandardCharsets.UTF_8);
        if (submissionBytes.length > MAX_SUBMISSION_BYTES) {
            throw ApiError.invalid("submission", "holds " + submissionBytes.length + " bytes; a schedule's submission is at most "
                    + MAX_SUBMISSION_BYTES + " (it is stored with the schedule): keep large inputs in a `workspace`");
        }
        SubmissionParser.Parsed parsed;
        try {
            parsed = parser.parse(submissionBytes, owner, null);
        } catch (ApiError e) {
            throw e.inField("submission");
        }
        Submission submission = parsed.submission();
        for (String field : new String[] {"waitMs", "waitFor", "stdin", "tty", "delayMs", "startAt"}) {
            if (body.has(field)) {
                throw ApiError.invalid("submission." + field, "has no meaning for a schedule's firings: drop it");
            }
        }
        submittable.accept(owner, submission);
        Schedules.Created made;
        try {
            made = schedules.create(owner, name, cron, everyMs, zone, overlap, catchUp, window, submission);
        } catch (Schedules.Refused r) {
            throw switch (r.why()) {
                case EXISTS -> new ApiError(409, "schedule_exists", "You have another schedule named " + name + ".",
                        "Delete it first (DELETE /v1/schedules/" + name + ") or choose another name.");
                case TOO_MANY -> new ApiError(409, "too_many_schedules", "You keep " + ScheduleStore.MAX_PER_OWNER
                        + " schedules already.", "Delete ones you no longer use; GET /v1/schedules lists them.");
            };
        } catch (IllegalArgumentException e) {
            throw ApiError.invalid(cron != null ? "cron" : "everyMs", e.getMessage());
        }
        ApiServer.json(ctx, made.created() ? 201 : 200, view(made.row()));
    }

    void list(Context ctx) {
        String owner = ApiServer.owner(ctx);
        ApiServer.json(ctx, 200, Map.of("schedules", schedules.list(owner).stream().map(ScheduleRoutes::view).toList()));
    }

    /** {@code POST /v1/schedules/{name}/pause}: it fires nothing until resumed. */
    void pause(Context ctx) {
        paused(ctx, true);
    }

    /** {@code POST /v1/schedules/{name}/resume}: it fires from now on; nothing due while it was paused is made up for. */
    void resume(Context ctx) {
        paused(ctx, false);
    }

    private void paused(Context ctx, boolean paused) {
        String owner = ApiServer.owner(ctx);
        String name = ctx.pathParam("name");
        ScheduleStore.Row row = schedules.pause(owner, name, paused).orElseThrow(() -> new ApiError(404,
                "schedule_not_found", "You have no schedule named " + name + ".", "GET /v1/schedules lists yours."));
        ApiServer.json(ctx, 200, view(row));
    }

    void delete(Context ctx) {
        String owner = ApiServer.owner(ctx);
        String name = ctx.pathParam("name");
        if (!schedules.delete(owner, name)) {
            throw new ApiError(404, "schedule_not_found", "You have no schedule named " + name + ".",
                    "GET /v1/schedules lists yours.");
        }
        ctx.status(204);
    }

    private static Map<String, Object> view(ScheduleStore.Row r) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("name", r.name());
        if (r.cron() != null) {
            v.put("cron", r.cron());
        } else {
            v.put("everyMs", r.everyMs());
        }
        v.put("timezone", r.zone());
        v.put("overlap", r.overlap());
        v.put("catchUp", r.catchUp());
        v.put("catchUpWindowMs", r.catchUpWindowMs());
        v.put("paused", r.paused());
        // When the fleet's clock looks at it next: its next firing, or at once for a new or resumed one.
        v.put("nextFireAt", r.paused() ? null : r.nextFireAt());
        try {
            JsonNode s = Json.mapper().readTree(r.submissionJson());
            v.put("command", s.path("command").asText());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        v.put("createdAt", r.createdAt());
        v.put("lastFiredAt", r.lastFiredAt());
        v.put("lastExecutionId", r.lastExecutionId() == null ? null : r.lastExecutionId().toString());
        v.put("fired", r.fired());
        v.put("skipped", r.skipped());
        v.put("guidance", "Each firing makes an execution labelled schedule=" + r.name() + ": GET /v1/executions?label=schedule="
                + r.name() + " lists them. " + (r.paused() ? "POST /v1/schedules/" + r.name() + "/resume resumes it; "
                : "POST /v1/schedules/" + r.name() + "/pause pauses it; ") + "DELETE /v1/schedules/" + r.name() + " stops it.");
        return v;
    }

    private static JsonNode read(byte[] body) {
        JsonNode root = JsonFields.readObject(body, "{\"name\": \"nightly\", \"cron\": \"0 3 * * *\","
                + " \"submission\": {\"command\": \"make nightly\"}}");
        for (Iterator<String> names = root.fieldNames(); names.hasNext(); ) {
            String n = names.next();
            if (!FIELDS.contains(n)) {
                throw ApiError.invalid(n.length() > 64 ? n.substring(0, 64) + "…" : n,
                        "is not a field of a schedule (known: name, cron, everyMs, timezone, overlap, catchUp,"
                                + " catchUpWindowMs, submission)");
            }
        }
        return root;
    }

    private static CatchUp catchUp(String value) {
        if (value == null) {
            return CatchUp.ONE;
        }
        return switch (value) {
            case "none" -> CatchUp.NONE;
            case "one" -> CatchUp.ONE;
            case "all" -> CatchUp.ALL;
            default -> throw ApiError.invalid("catchUp", "must be none (firings missed while no worker ran are let go),"
                    + " one (they fire once, the default) or all (each fires, oldest first)");
        };
    }

    private static long everyMs(JsonNode n) {
        if (!n.canConvertToLong() || !n.isIntegralNumber() || n.asLong() < 5000 || n.asLong() > 366L * 24 * 3600 * 1000) {
            throw ApiError.invalid("everyMs", "must be an integer from 5000 (5 s) to a year (31622400000)");
        }
        return n.asLong();
    }
}
