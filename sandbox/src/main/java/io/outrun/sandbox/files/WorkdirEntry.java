package io.outrun.sandbox.files;

/**
 * One entry of a workdir as read back after a run.
 *
 * @param path       relative to the workdir
 * @param type       what it is; only {@link Type#FILE} has content
 * @param size       bytes of a regular file's content, else 0
 * @param mode       permission bits
 * @param linkTarget a symbolic link's target as written (never followed), else null
 */
public record WorkdirEntry(String path, Type type, long size, int mode, String linkTarget) {

    public enum Type { FILE, DIRECTORY, SYMLINK, OTHER }
}
