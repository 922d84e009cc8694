package io.outrun.sandbox.files;

import io.outrun.model.inputs.InputPath;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Set;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;

/**
 * A workdir that is a host directory (the process backend): tars extracted into it, entries read
 * from it, both confined to it. Nothing is written through a link: a parent that is a symbolic
 * link refuses the entry, and links are reported, never followed.
 */
public final class HostWorkdir {

    private HostWorkdir() {
    }

    public static void extract(InputStream tarStream, Path dir) throws IOException {
        Path root = dir.toAbsolutePath().normalize();
        TarArchiveInputStream tar = new TarArchiveInputStream(tarStream);
        TarArchiveEntry entry;
        while ((entry = tar.getNextEntry()) != null) {
            String path = InputPath.check(entry.getName(), TarEntries.MAX_PATH);
            Path target = root.resolve(path).normalize();
            if (!target.startsWith(root) || throughLink(root, target)) {
                throw new IOException("refusing to write " + path + " outside the workdir");
            }
            if (entry.isDirectory()) {
                Files.createDirectories(target);
            } else if (entry.isSymbolicLink()) {
                Files.deleteIfExists(target);
                Files.createSymbolicLink(target, Path.of(entry.getLinkName()));
            } else if (entry.isLink()) {
                // A second name of a file extracted before it (a workspace keeps hard links).
                Path existing = root.resolve(InputPath.check(entry.getLinkName(), TarEntries.MAX_PATH)).normalize();
                if (!existing.startsWith(root) || throughLink(root, existing) || !Files.isRegularFile(existing,
                        LinkOption.NOFOLLOW_LINKS)) {
                    throw new IOException("refusing a hard link " + path + " to " + entry.getLinkName());
                }
                Files.createDirectories(target.getParent());
                Files.deleteIfExists(target);
                Files.createLink(target, existing);
            } else if (entry.isFile() && !entry.isLink() && !entry.isFIFO() && !entry.isCharacterDevice()
                    && !entry.isBlockDevice()) {
                Files.createDirectories(target.getParent());
                Files.deleteIfExists(target);
                Files.copy(tar, target);
                Files.setPosixFilePermissions(target, permissions(entry.getMode()));
            }
            // Devices, FIFOs and hard links are never written.
        }
    }

    private static boolean throughLink(Path root, Path target) {
        for (Path p = target.getParent(); p != null && p.startsWith(root) && !p.equals(root); p = p.getParent()) {
            if (Files.isSymbolicLink(p)) {
                return true;
            }
        }
        return false;
    }

    /** Visits {@code dir/requested} (a file or a tree) without following links. */
    public static void visit(Path dir, String requested, WorkdirVisitor visitor) throws IOException {
        Path root = dir.toAbsolutePath().normalize();
        Path start = requested.isEmpty() ? root : root.resolve(InputPath.check(requested));
        if (throughLink(root, start) || !Files.exists(start, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        Files.walkFileTree(start, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes attrs) throws IOException {
                if (!d.equals(root)) {
                    visitor.visit(new WorkdirEntry(root.relativize(d).toString(), WorkdirEntry.Type.DIRECTORY, 0,
                            mode(d), null), InputStream.nullInputStream());
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) throws IOException {
                String rel = root.relativize(f).toString();
                if (attrs.isSymbolicLink()) {
                    visitor.visit(new WorkdirEntry(rel, WorkdirEntry.Type.SYMLINK, 0, 0777,
                            Files.readSymbolicLink(f).toString()), InputStream.nullInputStream());
                } else if (attrs.isRegularFile()) {
                    try (InputStream in = Files.newInputStream(f, LinkOption.NOFOLLOW_LINKS)) {
                        visitor.visit(new WorkdirEntry(rel, WorkdirEntry.Type.FILE, attrs.size(), mode(f), null), in);
                    }
                } else {
                    visitor.visit(new WorkdirEntry(rel, WorkdirEntry.Type.OTHER, 0, 0, null), InputStream.nullInputStream());
                }
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private static int mode(Path p) throws IOException {
        int mode = 0;
        for (PosixFilePermission perm : Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS)) {
            mode |= 1 << (8 - perm.ordinal());
        }
        return mode;
    }

    private static Set<PosixFilePermission> permissions(int mode) {
        Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
        PosixFilePermission[] all = PosixFilePermission.values();
        for (int i = 0; i < 9; i++) {
            if ((mode & (1 << (8 - i))) != 0) {
                set.add(all[i]);
            }
        }
        return set.isEmpty() ? PosixFilePermissions.fromString("r--------") : set;
    }
}
