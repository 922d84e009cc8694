package io.outrun.client.wire;

/**
 * What is kept of one stream of a finished or running execution.
 *
 * @param text         head, a marker naming the dropped byte count when truncated, then tail; with
 *                     {@code ?output=tail} only the end of that, with {@code ?output=none} absent
 * @param truncated    true when the middle was dropped because the stream passed maxOutputBytes
 * @param totalBytes   bytes the stream produced in all, kept or not
 * @param omittedBytes bytes of the stream before {@code text} that this answer leaves out
 *                     ({@code ?output=tail}); absent when {@code text} starts at the stream's start.
 *                     {@code GET …/output} without a cursor reads them
 */
public record StreamText(String text, boolean truncated, long totalBytes, Long omittedBytes) {
}
