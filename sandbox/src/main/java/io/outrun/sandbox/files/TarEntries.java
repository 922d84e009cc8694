package io.outrun.sandbox.files;

import io.outrun.model.inputs.InputPath;

import java.io.IOException;
import java.io.InputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;

/**
 * Reads a tar as the Docker engine's archive API answers it (entries rooted at the base name of
 * the path asked for) and hands each entry to a visitor with its path relative to the workdir.
 * Streamed: one entry at a time, its content read straight from the tar.
 */
public final class TarEntries {

    private TarEntries() {
    }

    /**
     * @param tar       the engine's answer for {@code <workdir>/<requested>}
     * @param requested the path asked for, relative to the workdir ("" for the workdir itself)
     */
    /** The longest path read back: Linux's PATH_MAX less the workdir it sits in, roughly. */
    public static final int MAX_PATH = 3800;

    /** A name of the engine's tar (rooted at the base name of the path asked for), relative to the workdir. */
    private static String relative(String name, String requested) {
        while (name.endsWith("/")) {
            name = name.substring(0, name.length() - 1);
        }
        int slash = name.indexOf('/');
        String rest = slash < 0 ? "" : name.substring(slash + 1);
        return requested.isEmpty() ? rest : rest.isEmpty() ? requested : requested + "/" + rest;
    }

    /**
     * @return true when the tar was read to its end; false when it stopped after a file over the
     *         visitor's {@link WorkdirVisitor#maxFileBytes} (skipping it would read all of it): the
     *         caller abandons the rest of the stream unread
     */
    public static boolean visit(InputStream tar, String requested, WorkdirVisitor visitor) throws IOException {
        TarArchiveInputStream in = new TarArchiveInputStream(tar);
        TarArchiveEntry entry;
        while ((entry = in.getNextEntry()) != null) {
            String path = relative(entry.getName(), requested);
            if (path.isEmpty()) {
                continue; // the workdir itself
            }
            try {
                path = InputPath.check(path, MAX_PATH);
            } catch (IllegalArgumentException e) {
                // Never let such a name through, but say it was there (a workspace reports it).
                visitor.skipped(path, e.getMessage());
                continue;
            }
            // A hard link names an earlier entry of the same tar (the engine writes the first name
            // it meets as the file, every other as a link to it); FIFOs and devices are never read.
            String linkedTo = null;
            if (entry.isLink()) {
                try {
                    linkedTo = InputPath.check(relative(entry.getLinkName(), requested), MAX_PATH);
                } catch (IllegalArgumentException e) {
                    visitor.skipped(path, "a hard link to a name that cannot be kept: " + e.getMessage());
                    continue;
                }
            }
            WorkdirEntry.Type type = entry.isSymbolicLink() ? WorkdirEntry.Type.SYMLINK
                    : entry.isDirectory() ? WorkdirEntry.Type.DIRECTORY
                    : linkedTo != null ? WorkdirEntry.Type.HARDLINK
                    : entry.isFIFO() || entry.isCharacterDevice() || entry.isBlockDevice() ? WorkdirEntry.Type.OTHER
                    : entry.isFile() ? WorkdirEntry.Type.FILE
                    : WorkdirEntry.Type.OTHER;
            long size = type == WorkdirEntry.Type.FILE ? entry.getSize() : 0;
            boolean tooLarge = size > visitor.maxFileBytes();
            visitor.visit(new WorkdirEntry(path, type, size, entry.getMode() & 07777,
                    type == WorkdirEntry.Type.SYMLINK ? entry.getLinkName() : linkedTo),
                    tooLarge ? InputStream.nullInputStream() : in);
            if (tooLarge) {
                visitor.skipped(requested.isEmpty() ? "(the rest of the workdir)" : "(the rest of " + requested + ")",
                        "not read: the archive stops at " + path + ", a file of " + size + " bytes over the limit of "
                                + visitor.maxFileBytes());
                return false;
            }
        }
        return true;
    }
}
