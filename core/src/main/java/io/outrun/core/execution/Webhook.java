package io.outrun.core.execution;

import java.time.Instant;

/**
 * Where an execution's completion webhook stands (issue 28): {@code waiting} (the execution has
 * not ended), {@code pending} (to be sent, again at {@code nextAttemptAt} after a failed attempt),
 * {@code delivered} (a 2xx came back) or {@code failed} (none within the delivery window).
 * {@code eventId} is the {@code webhook-id} every attempt carries.
 */
public record Webhook(String url, String state, String eventId, int attempts, Integer lastStatus, String lastError,
                      Instant lastAttemptAt, Instant nextAttemptAt, Instant deliveredAt) {

    /** A webhook just submitted: nothing to send until its execution ends. */
    public static Webhook waiting(String url) {
        return new Webhook(url, "waiting", null, 0, null, null, null, null, null);
    }
}
