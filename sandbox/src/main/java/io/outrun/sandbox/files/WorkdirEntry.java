package io.outrun.sandbox.files;

/**
 * One entry of a workdir as read back after a run.
 *
 * @param path       relative to the workdir
 * @param type       what it is; only {@link Type#FILE} has content
 * @param size       bytes of a regular file's content, else 0
 * @param mode       permission bits
 * @param linkTarget a symbolic link's target as written (never followed); for a hard link the path
 *                   (relative to the workdir) of the entry it shares its content with; else null
 */
public record WorkdirEntry(String path, Type type, long size, int mode, String linkTarget) {

    /** {@code HARDLINK}: a second name of a file read earlier in the same walk ({@code linkTarget}). */
    public enum Type { FILE, DIRECTORY, SYMLINK, HARDLINK, OTHER }
}
