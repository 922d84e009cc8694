package io.outrun.api.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.introspect.BeanPropertyDefinition;
import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.outrun.api.mcp.OutrunTools;
import io.outrun.client.wire.Json;
import io.outrun.client.wire.SubmissionField;
import io.outrun.client.wire.SubmitRequest;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * A submission's fields are declared once ({@link SubmissionField}); every place that names them
 * is held to that list here, so a field added in one place and not the others fails this test:
 * the Java client's {@link SubmitRequest}, the server's parser, the MCP run_command tool's input
 * schema and the OpenAPI document's {@code SubmitRequest}.
 */
class SubmissionFieldsTest {

    private static final Set<String> FIELDS = new HashSet<>(SubmissionField.wireNames());

    @Test
    void submitRequestWritesExactlyTheFields() {
        JavaType type = Json.mapper().constructType(SubmitRequest.class);
        Set<String> properties = Json.mapper().getSerializationConfig().introspect(type).findProperties().stream()
                .map(BeanPropertyDefinition::getName).collect(Collectors.toSet());
        assertThat(properties).isEqualTo(FIELDS);
    }

    @Test
    void theParserTakesEveryFieldAndNoOther() {
        SubmissionParser parser = new SubmissionParser(ApiConfig.defaults("127.0.0.1", 0));
        for (String field : SubmissionField.wireNames()) {
            if (field.equals("command")) {
                continue;
            }
            String body = "{\"command\": \"x\", \"" + field + "\": null}";
            assertThatCode(() -> parser.parse(body.getBytes(StandardCharsets.UTF_8), "alice", null)).as(field)
                    .doesNotThrowAnyException();
        }
        // The message as it was before the fields were declared once: SDKs and agents read it.
        assertThatThrownBy(() -> parser.parse("{\"command\": \"x\", \"bogus\": 1}".getBytes(StandardCharsets.UTF_8),
                "alice", null)).isInstanceOf(ApiError.class).hasMessageContaining("bogus: is not a field of a submission"
                + " (known: command, timeoutMs, maxOutputBytes, waitMs, waitFor, maxAttempts, image, env, workdir, labels,"
                + " files, artifacts, workspace, stdin, tty, memoryMb, cpus, pids, tmpfsMb, network, secrets, delayMs,"
                + " startAt, retry, webhook, identity, cancelWithParent)");
    }

    @Test
    void theOpenApiSubmitRequestHasExactlyTheFieldsWithTheirTypes() throws IOException {
        JsonNode properties;
        try (InputStream in = ApiServer.class.getResourceAsStream("openapi.json")) {
            properties = Json.mapper().readTree(in).path("components").path("schemas").path("SubmitRequest")
                    .path("properties");
        }
        Map<String, String> documented = new LinkedHashMap<>();
        properties.fields().forEachRemaining(e -> documented.put(e.getKey(), e.getValue().path("type").asText()));
        assertThat(documented.keySet()).isEqualTo(FIELDS);
        for (SubmissionField f : SubmissionField.values()) {
            assertThat(documented.get(f.wireName())).as(f.wireName()).isEqualTo(f.type().schemaName());
        }
    }

    @Test
    void theOpenApiBatchItemIsASubmitRequestWithoutWaitMsWithItsKey() throws IOException {
        JsonNode schemas;
        try (InputStream in = ApiServer.class.getResourceAsStream("openapi.json")) {
            schemas = Json.mapper().readTree(in).path("components").path("schemas");
        }
        Map<String, JsonNode> submit = new LinkedHashMap<>();
        schemas.path("SubmitRequest").path("properties").fields().forEachRemaining(e -> submit.put(e.getKey(), e.getValue()));
        submit.remove("waitMs");
        Map<String, JsonNode> item = new LinkedHashMap<>();
        schemas.path("BatchItem").path("properties").fields().forEachRemaining(e -> item.put(e.getKey(), e.getValue()));
        assertThat(item.remove("idempotencyKey")).isNotNull();
        assertThat(item).isEqualTo(submit);
    }

    @Test
    @SuppressWarnings("unchecked")
    void runCommandOffersTheFieldsItDoesNotExcludeAndItsOwn() {
        SyncToolSpecification runCommand = new OutrunTools(exchange -> null, McpJsonDefaults.getMapper())
                .specifications().stream().filter(s -> s.tool().name().equals("run_command")).findFirst().orElseThrow();
        Map<String, Object> properties = (Map<String, Object>) runCommand.tool().inputSchema().get("properties");
        Set<String> expected = Arrays.stream(SubmissionField.values())
                .filter(f -> f.mcp() != SubmissionField.Mcp.NOT_OFFERED).map(SubmissionField::wireName)
                .collect(Collectors.toCollection(HashSet::new));
        expected.addAll(OutrunTools.RUN_COMMAND_OWN);
        assertThat(properties.keySet()).isEqualTo(expected);
        List<String> wrongType = new ArrayList<>();
        for (SubmissionField f : SubmissionField.values()) {
            if (f.mcp() == SubmissionField.Mcp.SAME
                    && !f.type().schemaName().equals(((Map<String, Object>) properties.get(f.wireName())).get("type"))) {
                wrongType.add(f.wireName());
            }
        }
        assertThat(wrongType).as("fields whose MCP type is not the wire's").isEmpty();
    }
}
