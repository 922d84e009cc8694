package io.outrun.testing.faults;

/** One line of {@code webhooks.jsonl}: a delivery the receiver got (its webhook-id header and body). */
public record Delivery(long t, String webhookId, String executionId, String status) {
}
