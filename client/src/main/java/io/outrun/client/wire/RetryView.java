package io.outrun.client.wire;

import java.time.Instant;
import java.util.List;

/**
 * An execution's retries of a failed command, as asked and as they went.
 *
 * @param maxRetries  retries allowed after a failure
 * @param backoffMs   the first retry's wait; each next one waits twice as long (at most an hour)
 * @param on          the error codes retried
 * @param retries     retries made so far
 * @param lastFailure how the last retried attempt ended (absent before the first retry)
 * @param nextAt      while a retry waits its backoff: when it may start
 */
public record RetryView(int maxRetries, long backoffMs, List<String> on, int retries, String lastFailure, Instant nextAt) {
}
