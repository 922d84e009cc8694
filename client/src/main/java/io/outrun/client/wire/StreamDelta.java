package io.outrun.client.wire;

/**
 * Output of one stream since a cursor.
 *
 * @param text         the new text; starts with a marker when bytes were dropped since the cursor
 * @param droppedBytes bytes the cursor skipped because they were not kept (the dropped middle)
 * @param totalBytes   bytes the stream produced so far
 */
public record StreamDelta(String text, long droppedBytes, long totalBytes) {
}
