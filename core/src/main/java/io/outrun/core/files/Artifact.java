package io.outrun.core.files;

import java.time.Instant;

/**
 * One entry of an execution's artifacts.
 *
 * @param name     path relative to the workdir, or {@code stdout} / {@code stderr} (the kept full output)
 * @param status   {@code stored}; or why not: {@code over_limit}, {@code not_regular} (a link, FIFO,
 *                 device), {@code incomplete} (stored, but cut at the full-output cap)
 * @param size     bytes as served (decompressed); for one not stored, its size in the workdir
 * @param sha256   of the bytes as served; null when not stored
 * @param encoding how it is stored: {@code identity} or {@code gzip} (served decompressed)
 * @param detail   why it is not stored, or what is missing; else null
 * @param seekPoints for a gzip stored as members: pairs (raw offset, stored offset) of each member's
 *                 start, flattened; null otherwise
 */
public record Artifact(String name, String status, long size, String sha256, String encoding, String detail,
                       Instant createdAt, long[] seekPoints) {

    public Artifact(String name, String status, long size, String sha256, String encoding, String detail,
                    Instant createdAt) {
        this(name, status, size, sha256, encoding, detail, createdAt, null);
    }

    /** Where a read of raw byte {@code start} begins: (raw offset, stored offset) of the member holding it. */
    public long[] seekTo(long start) {
        long raw = 0;
        long stored = 0;
        if (seekPoints != null) {
            for (int i = 0; i + 1 < seekPoints.length && seekPoints[i] <= start; i += 2) {
                raw = seekPoints[i];
                stored = seekPoints[i + 1];
            }
        }
        return new long[] {raw, stored};
    }

    public boolean stored() {
        return status.equals("stored") || status.equals("incomplete");
    }
}
