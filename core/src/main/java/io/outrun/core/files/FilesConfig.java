package io.outrun.core.files;

/**
 * Limits on what crosses the sandbox's edge. Validated once; every value in bytes unless named.
 *
 * @param maxInputBytes     input files of one submission, decoded, in all (default 8 MiB); the
 *                          submit's body limit grows by 4/3 of it (base64) to fit
 * @param maxInputFiles     input files per submission (default 1000)
 * @param maxArtifactBytes  one collected file (default 256 MiB); a larger one is reported, not stored
 * @param maxArtifactsBytes all collected files of one execution (default 1 GiB)
 * @param maxArtifacts      collected files per execution (default 1000)
 * @param maxWorkspaceBytes a workspace as saved (a tar of the workdir, default 256 MiB); a larger
 *                          save fails, the run does not
 * @param fullOutputBytes   compressed bytes kept of each stream's whole output once it outgrows its
 *                          head+tail bound (default 256 MiB; 0 keeps none)
 */
public record FilesConfig(long maxInputBytes, int maxInputFiles, long maxArtifactBytes, long maxArtifactsBytes,
                          int maxArtifacts, long maxWorkspaceBytes, long fullOutputBytes) {

    public static final FilesConfig DEFAULTS =
            new FilesConfig(8L << 20, 1000, 256L << 20, 1L << 30, 1000, 256L << 20, 256L << 20);

    /**
     * The limits of this process, as its command line set them at start ({@code --max-input-bytes}
     * and the like); {@link #DEFAULTS} otherwise. One value per process, read where nodes are
     * built, so the node constructors many tests call keep their shape.
     */
    private static volatile FilesConfig active;

    public static FilesConfig active() {
        FilesConfig a = active;
        return a == null ? DEFAULTS : a;
    }

    public static void activate(FilesConfig config) {
        active = config;
    }

    /** Globs per submission. */
    public static final int MAX_ARTIFACT_PATTERNS = 64;

    public FilesConfig {
        if (maxInputBytes < 0 || maxInputBytes > (256L << 20)) {
            throw new IllegalArgumentException("--max-input-bytes must be between 0 and 256 MiB, got: " + maxInputBytes);
        }
        if (maxInputFiles < 0 || maxArtifacts < 0) {
            throw new IllegalArgumentException("file counts must not be negative");
        }
        if (maxArtifactBytes < 0 || maxArtifactsBytes < 0 || maxWorkspaceBytes < 0 || fullOutputBytes < 0) {
            throw new IllegalArgumentException("artifact, workspace and full-output limits must not be negative");
        }
    }

    /** The submit's body limit: the usual one plus the input files as base64 with room for their JSON. */
    public int submitBodyBytes(int maxBodyBytes) {
        long limit = maxBodyBytes + maxInputBytes * 4 / 3 + (long) maxInputFiles * 256;
        return (int) Math.min(Integer.MAX_VALUE - 1, limit);
    }
}
