package io.outrun.sandbox.files;

import java.nio.file.Path;
import java.util.List;

/**
 * What a run carries across the sandbox's edge besides its command.
 *
 * @param inputs        tars extracted into the workdir, in order, before the command starts (a
 *                      restored workspace, then the input files)
 * @param keepWorkdir   true when the workdir must still be readable once the command ended
 *                      ({@link io.outrun.sandbox.Run#readWorkdir}): artifacts or a workspace to save
 * @param fullOutputCap compressed bytes kept per stream of the whole output once it outgrows its
 *                      head+tail bound (0: the whole output is not kept)
 * @param spoolDir      where the whole output is spooled while the run lasts
 */
public record RunFiles(List<TarSource> inputs, boolean keepWorkdir, long fullOutputCap, Path spoolDir) {

    public static final RunFiles NONE = new RunFiles(List.of(), false, 0, null);

    public RunFiles {
        inputs = inputs == null ? List.of() : List.copyOf(inputs);
        if (fullOutputCap > 0 && spoolDir == null) {
            throw new IllegalArgumentException("a spool directory is needed to keep the full output");
        }
    }

    /** True when the workdir must be a volume the engine's archive API can reach. */
    public boolean touchesWorkdir() {
        return keepWorkdir || !inputs.isEmpty();
    }
}
