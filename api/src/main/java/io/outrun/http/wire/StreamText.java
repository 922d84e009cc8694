package io.outrun.http.wire;

/**
 * What is kept of one stream of a finished or running execution.
 *
 * @param text       head, a marker naming the dropped byte count when truncated, then tail
 * @param truncated  true when the middle was dropped because the stream passed maxOutputBytes
 * @param totalBytes bytes the stream produced in all, kept or not
 */
public record StreamText(String text, boolean truncated, long totalBytes) {
}
