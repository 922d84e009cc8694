package io.outrun.model.inputs;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * The tar of a submission's input files, as stored and as put into the workdir: regular files and
 * the directories above them, all owned by the sandbox user (uid 10001), so the command can change
 * what it was given. Built once at submit; bounded by the API's files limit.
 */
public final class InputTar {

    /** The sandbox image's unprivileged user (sandbox/image/build.sh). */
    public static final int SANDBOX_UID = 10001;

    private InputTar() {
    }

    public static byte[] build(List<InputFile> files) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
            tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
            Set<String> dirs = new LinkedHashSet<>();
            for (InputFile file : files) {
                int slash = file.path().indexOf('/');
                while (slash > 0) {
                    dirs.add(file.path().substring(0, slash));
                    slash = file.path().indexOf('/', slash + 1);
                }
            }
            for (String dir : dirs) {
                TarArchiveEntry entry = new TarArchiveEntry(dir + "/");
                entry.setMode(TarArchiveEntry.DEFAULT_DIR_MODE & ~07777 | 0755);
                own(entry);
                tar.putArchiveEntry(entry);
                tar.closeArchiveEntry();
            }
            for (InputFile file : files) {
                TarArchiveEntry entry = new TarArchiveEntry(file.path());
                entry.setSize(file.content().length);
                entry.setMode(TarArchiveEntry.DEFAULT_FILE_MODE & ~07777 | file.mode());
                own(entry);
                tar.putArchiveEntry(entry);
                tar.write(file.content());
                tar.closeArchiveEntry();
            }
            tar.finish();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    private static void own(TarArchiveEntry entry) {
        entry.setUserId(SANDBOX_UID);
        entry.setGroupId(SANDBOX_UID);
        entry.setModTime(System.currentTimeMillis());
    }
}
