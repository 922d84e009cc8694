package io.outrun.worker.webhook;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outrun.core.store.WebhookStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The body of an {@code execution.finished} event: the same bytes on every attempt (made from the
 * ended row only), so a receiver that dedupes by {@code webhook-id} sees one event.
 */
final class WebhookEvent {

    static final String TYPE = "execution.finished";
    private static final ObjectMapper JSON = new ObjectMapper();

    private WebhookEvent() {
    }

    static byte[] body(WebhookStore.Due d) {
        ObjectNode root = JSON.createObjectNode();
        root.put("type", TYPE);
        root.put("timestamp", d.endedAt().toString());
        ObjectNode data = root.putObject("data");
        data.put("executionId", d.executionId().toString());
        data.put("status", d.status());
        if (d.exitCode() == null) {
            data.putNull("exitCode");
        } else {
            data.put("exitCode", d.exitCode());
        }
        if (d.errorCode() == null) {
            data.putNull("error");
        } else {
            data.putObject("error").put("code", d.errorCode()).put("message", d.errorMessage());
        }
        data.put("attempt", d.executionAttempt());
        try {
            JsonNode labels = d.labelsJson() == null ? JSON.createObjectNode() : JSON.readTree(d.labelsJson());
            data.set("labels", labels);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("unreadable labels of execution " + d.executionId(), e);
        }
        if (d.startedAt() == null || d.finishedAt() == null) {
            data.putNull("durationMs"); // cancelled before it started
        } else {
            data.put("durationMs", Math.max(0, Duration.between(d.startedAt(), d.finishedAt()).toMillis()));
        }
        return root.toString().getBytes(StandardCharsets.UTF_8);
    }
}
