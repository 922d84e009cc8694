package io.outrun.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outrun.client.wire.BatchSubmission;
import io.outrun.client.wire.Json;
import io.outrun.client.wire.SubmitRequest;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The submissions of {@code outrun run --batch FILE}: one JSON object per line, a single submit's
 * body ({@code {"command": "make test", "labels": {"shard": "1"}}}) with an optional
 * {@code idempotencyKey}. Blank lines and lines starting with {@code #} are skipped. The whole
 * file is read and checked before anything is sent, so a line that is not such an object (bad
 * JSON, a field no submission has, a value of the wrong type) fails the command and stores nothing;
 * the values themselves (ranges, allowlists) are the server's to check, per submission.
 */
final class BatchFile {

    /** The most submissions one request carries (the API's limit); a longer file is sent in several. */
    static final int MAX_PER_REQUEST = 1000;

    /** The field of a line that is not a submission's: the key a single submit sends as its header. */
    static final String IDEMPOTENCY_KEY = "idempotencyKey";

    /** Strict where the wire mapper is lenient: a misspelt field is an error here, not a default. */
    private static final ObjectMapper STRICT = Json.mapper().copy()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    /** One submission and the line of the file it came from (1-based). */
    record Line(int number, BatchSubmission submission) {
    }

    private BatchFile() {
    }

    /** The submissions of {@code file} ({@code -}: stdin). */
    static List<Line> read(String file) {
        try {
            if (file.equals("-")) {
                return parse("stdin", System.in);
            }
            try (InputStream in = Files.newInputStream(Path.of(file))) {
                return parse(file, in);
            }
        } catch (IOException e) {
            throw new UsageException("--batch " + file + " cannot be read: " + e.getMessage());
        }
    }

    static List<Line> parse(String name, InputStream in) throws IOException {
        BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        List<Line> lines = new ArrayList<>();
        int number = 0;
        for (String text = reader.readLine(); text != null; text = reader.readLine()) {
            number++;
            if (number == 1 && text.startsWith("\uFEFF")) {
                text = text.substring(1); // a byte order mark some editors write
            }
            String trimmed = text.strip();
            if (trimmed.isEmpty() || trimmed.startsWith("#")) {
                continue;
            }
            lines.add(new Line(number, submission(name, number, trimmed)));
        }
        if (lines.isEmpty()) {
            throw new UsageException("--batch " + name + " holds no submissions: write one JSON object per line, e.g."
                    + " {\"command\": \"make test\"} (blank lines and lines starting with # are skipped)");
        }
        return lines;
    }

    private static BatchSubmission submission(String name, int number, String text) {
        String where = name + " line " + number + ": ";
        JsonNode node;
        try {
            node = STRICT.readTree(text);
        } catch (JsonProcessingException e) {
            throw new UsageException(where + "not valid JSON: " + e.getOriginalMessage()
                    + (e.getLocation() != null ? " (column " + e.getLocation().getColumnNr() + ")" : ""));
        }
        if (!(node instanceof ObjectNode object)) {
            throw new UsageException(where + "must be a JSON object such as {\"command\": \"make test\"}, got: "
                    + abbreviate(text));
        }
        String key = null;
        JsonNode keyNode = object.remove(IDEMPOTENCY_KEY);
        if (keyNode != null && !keyNode.isNull()) {
            if (!keyNode.isTextual()) {
                throw new UsageException(where + IDEMPOTENCY_KEY + " must be a string");
            }
            key = keyNode.asText();
        }
        try {
            return new BatchSubmission(STRICT.treeToValue(object, SubmitRequest.class), key);
        } catch (UnrecognizedPropertyException e) {
            throw new UsageException(where + "unknown field " + e.getPropertyName() + "; a line takes a submission's"
                    + " fields (as POST /v1/executions: command, timeoutMs, labels, env, ...) and idempotencyKey");
        } catch (JsonMappingException e) {
            String field = e.getPath().stream().map(r -> r.getFieldName() != null ? r.getFieldName() : "[" + r.getIndex() + "]")
                    .collect(Collectors.joining(".")).replace(".[", "[");
            throw new UsageException(where + (field.isEmpty() ? "" : field + ": ") + "wrong type ("
                    + e.getOriginalMessage().lines().findFirst().orElse("") + ")");
        } catch (JsonProcessingException e) {
            throw new UsageException(where + e.getOriginalMessage());
        }
    }

    private static String abbreviate(String text) {
        return text.length() <= 60 ? text : text.substring(0, 57) + "...";
    }
}
