package io.outrun.client.wire;

import java.time.Instant;

/**
 * An execution's completion webhook and how its delivery goes (issue 28).
 *
 * @param url           where the event is POSTed
 * @param state         waiting (not ended yet) | pending (to send, again at nextAttemptAt) | delivered | failed
 *                      (no 2xx within the delivery window)
 * @param eventId       the {@code webhook-id} every attempt carries (the receiver's dedupe key), once ended
 * @param attempts      attempts made so far
 * @param lastStatus    the receiver's HTTP status at the last attempt (absent: no answer)
 * @param lastError     why the last attempt failed (absent once delivered)
 * @param lastAttemptAt when the last attempt was made
 * @param nextAttemptAt when the next attempt is due, while pending
 * @param deliveredAt   when a 2xx came back
 */
public record WebhookView(String url, String state, String eventId, int attempts, Integer lastStatus, String lastError,
                          Instant lastAttemptAt, Instant nextAttemptAt, Instant deliveredAt) {
}
