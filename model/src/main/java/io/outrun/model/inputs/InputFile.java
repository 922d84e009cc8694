package io.outrun.model.inputs;

import java.util.Objects;

/**
 * One file to write into the workdir before the command starts.
 *
 * @param path    relative to the workdir, already checked by {@link InputPath#check}
 * @param content the exact bytes
 * @param mode    permission bits (e.g. 0644, 0755); only 0777 bits are kept
 */
public record InputFile(String path, byte[] content, int mode) {

    public InputFile {
        path = InputPath.check(path);
        Objects.requireNonNull(content, "content");
        mode = mode & 0777;
    }
}
