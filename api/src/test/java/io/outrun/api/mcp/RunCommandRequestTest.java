package io.outrun.api.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.outrun.client.wire.Json;
import io.outrun.client.wire.SubmissionField;
import io.outrun.client.wire.SubmitRequest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Every submission field the run_command tool offers reaches the request it sends: a field added
 * to its schema ({@code SubmissionFieldsTest} holds the schema to {@link SubmissionField}) but
 * not read from the call's arguments would otherwise be dropped without a word.
 */
class RunCommandRequestTest {

    @Test
    void everyOfferedFieldIsSent() {
        Map<String, Object> args = new HashMap<>();
        for (SubmissionField f : SubmissionField.values()) {
            if (f.mcp() != SubmissionField.Mcp.NOT_OFFERED) {
                args.put(f.wireName(), sample(f));
            }
        }
        SubmitRequest request = RunCommandRequest.from(new ToolArgs(args), false, 10_000);
        JsonNode sent = Json.mapper().valueToTree(request);
        List<String> missing = new ArrayList<>();
        for (String name : args.keySet()) {
            if (!sent.has(name)) {
                missing.add(name);
            }
        }
        assertThat(missing).as("offered by run_command but not sent").isEmpty();
    }

    /** A value of the shape the tool takes (the server checks the values themselves). */
    private static Object sample(SubmissionField f) {
        return switch (f) {
            case WAIT_FOR -> "output";
            case IDENTITY -> Boolean.TRUE;
            case RETRY -> Map.of("maxRetries", 1);
            case FILES -> List.of(Map.of("path", "a.txt", "content", "hi"));
            default -> switch (f.type()) {
                case STRING -> "x";
                case INTEGER -> 16;
                case NUMBER -> 0.5;
                case BOOLEAN -> Boolean.TRUE;
                case OBJECT -> Map.of("LANG", "C");
                case ARRAY -> List.of("a");
            };
        };
    }
}
