package io.outrun.sandbox.files;

import io.outrun.inputs.InputPath;

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
    public static void visit(InputStream tar, String requested, WorkdirVisitor visitor) throws IOException {
        TarArchiveInputStream in = new TarArchiveInputStream(tar);
        TarArchiveEntry entry;
        while ((entry = in.getNextEntry()) != null) {
            String name = entry.getName();
            while (name.endsWith("/")) {
                name = name.substring(0, name.length() - 1);
            }
            int slash = name.indexOf('/');
            String rest = slash < 0 ? "" : name.substring(slash + 1);
            String path = requested.isEmpty() ? rest : rest.isEmpty() ? requested : requested + "/" + rest;
            if (path.isEmpty()) {
                continue; // the workdir itself
            }
            try {
                path = InputPath.check(path);
            } catch (IllegalArgumentException e) {
                continue; // no engine writes such a name; never let one through
            }
            // FIFOs, devices and hard links are neither files nor links to report: never read.
            WorkdirEntry.Type type = entry.isSymbolicLink() ? WorkdirEntry.Type.SYMLINK
                    : entry.isDirectory() ? WorkdirEntry.Type.DIRECTORY
                    : entry.isFIFO() || entry.isCharacterDevice() || entry.isBlockDevice() || entry.isLink()
                            ? WorkdirEntry.Type.OTHER
                    : entry.isFile() ? WorkdirEntry.Type.FILE
                    : WorkdirEntry.Type.OTHER;
            long size = type == WorkdirEntry.Type.FILE ? entry.getSize() : 0;
            visitor.visit(new WorkdirEntry(path, type, size, entry.getMode() & 07777,
                    type == WorkdirEntry.Type.SYMLINK ? entry.getLinkName() : null), in);
        }
    }
}
