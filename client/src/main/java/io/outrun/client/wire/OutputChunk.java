package io.outrun.client.wire;

/**
 * The answer of {@code GET /v1/executions/{id}/output}: what each stream printed after the
 * cursor, and the cursor to ask with next.
 *
 * @param status    the execution's status when the answer was made
 * @param attempt   the attempt whose output this is; output restarts from zero when a lost
 *                  attempt is retried, and {@code restarted} is true on the first chunk of the new one
 * @param cursor    opaque; pass it back to get only what follows
 * @param done      true when the execution has finished and this chunk holds the last of its output
 * @param more      true when this chunk stopped at the {@code maxBytes} asked for and output already
 *                  printed follows: ask again with {@code cursor} at once; every byte comes exactly once
 * @param exitCode  the command's exit code once done
 * @param guidance  what to do next
 * @param waitMsClamped present when the waitMs asked for was above this server's maximum: the wait it used
 */
public record OutputChunk(
        String executionId,
        String status,
        int attempt,
        boolean restarted,
        StreamDelta stdout,
        StreamDelta stderr,
        String cursor,
        boolean done,
        boolean more,
        Integer exitCode,
        String guidance,
        Long waitMsClamped) {

    public OutputChunk(String executionId, String status, int attempt, boolean restarted, StreamDelta stdout,
                       StreamDelta stderr, String cursor, boolean done, boolean more, Integer exitCode, String guidance) {
        this(executionId, status, attempt, restarted, stdout, stderr, cursor, done, more, exitCode, guidance, null);
    }

    /** The same answer, saying that the wait asked for was clamped to {@code usedMs}. */
    public OutputChunk withWaitMsClamped(Long usedMs) {
        return new OutputChunk(executionId, status, attempt, restarted, stdout, stderr, cursor, done, more, exitCode,
                guidance, usedMs);
    }
}
