package io.outrun.client.wire;

/**
 * The answer of {@code POST /v1/executions/{id}/stdin}.
 *
 * @param executionId the execution written to
 * @param written     bytes this write appended
 * @param offset      where they start in the stdin (the bytes written before them)
 * @param stdin       the stdin after this write
 * @param cursor      output cursor at the end of the output stored before this write: reading from it
 *                    gives what the command printed since (its answer, and anything not read yet)
 * @param guidance    what to do next
 */
public record StdinWritten(String executionId, long written, long offset, StdinView stdin, String cursor, String guidance) {
}
