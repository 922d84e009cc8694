package io.outrun.core.execution;

import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * Retries of a failed command (issue 28), as a submission asked for them and as they went: a
 * failed attempt whose error code is in {@code on} runs again, after {@code backoffMs × 2^k}
 * (capped at {@link #MAX_BACKOFF}), while fewer than {@code maxRetries} retries were made. Lease
 * re-drives (a lost worker) are not retries and are counted apart, by attempts.
 *
 * @param maxRetries  retries allowed after the first attempt's failure
 * @param backoffMs   the first retry's wait; each next one waits twice as long
 * @param on          the error codes retried: {@code command_failed}, {@code timed_out}, {@code out_of_memory}
 * @param retries     retries made so far
 * @param lastFailure what the last retried attempt ended with (null before the first retry)
 */
public record Retry(int maxRetries, long backoffMs, List<String> on, int retries, String lastFailure) {

    public static final Set<String> RETRIABLE = Set.of("command_failed", "timed_out", "out_of_memory");
    public static final int MAX_RETRIES = 10;
    public static final long MAX_BACKOFF_MS = Duration.ofHours(1).toMillis();
    public static final Duration MAX_BACKOFF = Duration.ofMillis(MAX_BACKOFF_MS);
    public static final long DEFAULT_BACKOFF_MS = 1000;

    public Retry {
        on = on == null || on.isEmpty() ? List.of("command_failed") : List.copyOf(on);
    }

    /** A policy as submitted: no retry made yet. */
    public static Retry policy(int maxRetries, long backoffMs, List<String> on) {
        return new Retry(maxRetries, backoffMs, on, 0, null);
    }

    /** Whether an attempt that ended with {@code errorCode} runs again. */
    public boolean applies(String errorCode) {
        return errorCode != null && retries < maxRetries && on.contains(errorCode);
    }

    /** The wait before the next retry: {@code backoffMs × 2^retries}, capped. */
    public Duration nextBackoff() {
        long ms = backoffMs;
        for (int i = 0; i < retries && ms < MAX_BACKOFF_MS; i++) {
            ms *= 2;
        }
        return Duration.ofMillis(Math.min(ms, MAX_BACKOFF_MS));
    }
}
