package io.outrun.worker.lease;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The kill switch's files in a node's lease directory: one per run, holding the second past which
 * the run must die (read by the run's watchdog), rewritten in place at each confirmed renewal.
 */
final class LeaseFiles {

    private static final Logger LOG = LoggerFactory.getLogger(LeaseKeeper.class);
    /** The warm pool's API directory of a pooled container is its lease file's name and this (the sandbox's WarmPool). */
    static final String POOL_API_DIR_SUFFIX = ".api";

    private LeaseFiles() {
    }

    /** Writes {@code deadlineSeconds} (wall-clock epoch seconds) into the lease file of {@code run}. */
    static void write(Path file, long deadlineSeconds, Object run) {
        // Locale.ROOT: ASCII digits for the shell scripts that read it, whatever the JVM's locale.
        byte[] text = String.format(Locale.ROOT, "%012d\n", deadlineSeconds).getBytes(StandardCharsets.US_ASCII);
        // In place, one write of a fixed width: a bind mount keeps the inode, a reader never sees it empty.
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(text), 0);
            if (!readableByAll(file)) {
                // The sandbox user (another uid) must read it, whatever this process's umask.
                Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
            }
        } catch (IOException e) {
            // The run then dies at its last written deadline: safe, only early.
            LOG.warn("cannot write the lease file of {}: {}", run, e.toString());
        }
    }

    private static boolean readableByAll(Path file) throws IOException {
        return Files.getPosixFilePermissions(file).contains(PosixFilePermission.OTHERS_READ);
    }

    /**
     * Lease files no run needs any more, whoever left them: the directory may be shared by the
     * nodes of several deployments on one host, and a SIGKILLed node never removes its own. A live
     * run's file is rewritten at every renewal and a warm pool's container gives up after an hour
     * idle, so a file untouched for longer than {@code age} belongs to nothing that still runs.
     * Then a pooled container's API directory ({@code pool-<uuid>.api}) whose lease file
     * ({@code pool-<uuid>}) is gone, and which is itself untouched for as long: the pool makes the
     * directory after the file and removes it first, so it is a leftover (with the run's socket
     * link in it, if any).
     *
     * @return files (and directories) removed
     */
    static int pruneStale(Path leaseDir, Duration age) {
        long before = System.currentTimeMillis() - age.toMillis();
        int removed = 0;
        List<Path> poolDirs = new ArrayList<>();
        try (var files = Files.list(leaseDir)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                try {
                    String name = file.getFileName().toString();
                    if (name.startsWith("pool-") && name.endsWith(POOL_API_DIR_SUFFIX)
                            && Files.isDirectory(file, LinkOption.NOFOLLOW_LINKS)) {
                        poolDirs.add(file);
                    } else if (Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)
                            && Files.getLastModifiedTime(file).toMillis() < before && Files.deleteIfExists(file)) {
                        removed++;
                    }
                } catch (IOException e) {
                    LOG.debug("cannot prune lease file {}: {}", file, e.toString());
                }
            }
        } catch (IOException e) {
            LOG.debug("cannot list the lease directory {}: {}", leaseDir, e.toString());
        }
        for (Path dir : poolDirs) {
            String name = dir.getFileName().toString();
            Path leaseFile = dir.resolveSibling(name.substring(0, name.length() - POOL_API_DIR_SUFFIX.length()));
            try {
                if (Files.exists(leaseFile, LinkOption.NOFOLLOW_LINKS)
                        || Files.getLastModifiedTime(dir, LinkOption.NOFOLLOW_LINKS).toMillis() >= before) {
                    continue;
                }
                try (var inside = Files.list(dir)) {
                    for (Path f : (Iterable<Path>) inside::iterator) {
                        Files.deleteIfExists(f);
                    }
                }
                if (Files.deleteIfExists(dir)) {
                    removed++;
                }
            } catch (IOException e) {
                LOG.debug("cannot prune pool API directory {}: {}", dir, e.toString());
            }
        }
        return removed;
    }
}
