package io.outrun.core.store;

import java.util.UUID;

/**
 * Bytes of one stream of one run at their exact offset in the stream.
 *
 * @param stream 1 for stdout, 2 for stderr
 */
public record Chunk(UUID executionId, long epoch, int stream, long offset, byte[] data) {

    public static final int STDOUT = 1;
    public static final int STDERR = 2;

    public long end() {
        return offset + data.length;
    }
}
