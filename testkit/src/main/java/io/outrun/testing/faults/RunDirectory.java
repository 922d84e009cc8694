package io.outrun.testing.faults;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The files of one fault run as the harness left them: {@code history.jsonl} (required),
 * {@code marks.jsonl}, {@code webhooks.jsonl}, {@code nemesis.jsonl} (absent: empty).
 *
 * <p>A line that does not parse is counted in {@link #malformed()} and skipped, not fatal: a
 * writer killed by the nemesis may leave a torn last line, and one bad line must not hide the
 * rest of the run.
 */
public record RunDirectory(Path dir, List<Op> history, List<Mark> marks, List<Delivery> deliveries,
                           List<JsonNode> nemesis, List<String> malformed) {

    public static final String HISTORY = "history.jsonl";
    public static final String MARKS = "marks.jsonl";
    public static final String WEBHOOKS = "webhooks.jsonl";
    public static final String NEMESIS = "nemesis.jsonl";

    private static final ObjectMapper JSON = new ObjectMapper();

    /** Reads {@code dir}; throws if it has no history (nothing to check is not a pass). */
    public static RunDirectory read(Path dir) {
        if (!Files.isRegularFile(dir.resolve(HISTORY))) {
            throw new IllegalArgumentException("no " + HISTORY + " in " + dir.toAbsolutePath());
        }
        List<String> malformed = new ArrayList<>();
        return new RunDirectory(dir,
                lines(dir, HISTORY, malformed, RunDirectory::op),
                lines(dir, MARKS, malformed, RunDirectory::mark),
                lines(dir, WEBHOOKS, malformed, RunDirectory::delivery),
                lines(dir, NEMESIS, malformed, n -> n),
                malformed);
    }

    private static <T> List<T> lines(Path dir, String file, List<String> malformed, Function<JsonNode, T> as) {
        Path path = dir.resolve(file);
        List<T> out = new ArrayList<>();
        if (!Files.isRegularFile(path)) {
            return out;
        }
        List<String> lines;
        try {
            lines = Files.readAllLines(path, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + path, e);
        }
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty()) {
                continue;
            }
            try {
                out.add(as.apply(JSON.readTree(line)));
            } catch (IOException | RuntimeException e) {
                malformed.add(file + ":" + (i + 1) + ": " + (line.length() > 120 ? line.substring(0, 120) + "…" : line));
            }
        }
        return out;
    }

    private static Op op(JsonNode n) {
        return new Op(required(n, "t").asLong(), n.path("process").asInt(0), text(required(n, "op")),
                text(required(n, "phase")), text(n.get("key")), id(n.get("executionId")), integer(n.get("status")),
                text(n.get("error")), n.path("webhook").asBoolean(false), integer(n.get("expectLines")),
                text(n.get("owner")), text(n.get("schedule")));
    }

    private static Mark mark(JsonNode n) {
        return new Mark(required(n, "t").asLong(), text(required(n, "mark")), id(required(n, "executionId")),
                required(n, "attempt").asInt(), text(n.get("host")), integer(n.get("exit")));
    }

    private static Delivery delivery(JsonNode n) {
        return new Delivery(required(n, "t").asLong(), text(n.get("webhookId")), id(required(n, "executionId")),
                text(n.get("status")));
    }

    private static JsonNode required(JsonNode n, String field) {
        JsonNode v = n.get(field);
        if (v == null || v.isNull()) {
            throw new IllegalArgumentException("no " + field);
        }
        return v;
    }

    private static String text(JsonNode v) {
        return v == null || v.isNull() ? null : v.asText();
    }

    /** Ids compare as the database prints them: lower case. */
    private static String id(JsonNode v) {
        String s = text(v);
        return s == null ? null : s.toLowerCase(java.util.Locale.ROOT);
    }

    private static Integer integer(JsonNode v) {
        return v == null || v.isNull() ? null : v.asInt();
    }
}
