package io.outrun.worker.dev;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Proof that this process is the one {@code outrun dev} using a data directory: an OS file lock
 * on {@code DIR/outrun-dev.pid}, held for the life of the process, which also names its pid.
 *
 * <p>The OS drops the lock when the process dies, however it dies (SIGKILL included), so a lock
 * we can take means no live {@code outrun dev} holds the directory, and whatever it left
 * running there (its PostgreSQL) is an orphan we may stop. The pid in the file is only for the
 * message a second {@code outrun dev} prints; the lock is the truth.
 */
public final class DataDirLock implements AutoCloseable {

    static final String FILE = "outrun-dev.pid";

    private final FileChannel channel;
    private final FileLock lock;

    private DataDirLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    /** Takes the lock of {@code dir} (created if missing), or says who holds it. */
    public static DataDirLock acquire(Path dir) {
        Path file = dir.resolve(FILE);
        FileChannel channel = null;
        try {
            Files.createDirectories(dir);
            channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
            FileLock lock;
            try {
                lock = channel.tryLock();
            } catch (OverlappingFileLockException sameJvm) {
                lock = null;
            }
            if (lock == null) {
                String holder = readHolder(channel);
                channel.close();
                throw new DevDirException("another `outrun dev`" + (holder.isEmpty() ? "" : " (pid " + holder + ")")
                        + " is using --data-dir " + dir + "; stop it first, or give this one another --data-dir");
            }
            channel.truncate(0);
            channel.write(ByteBuffer.wrap((ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.US_ASCII)), 0);
            channel.force(false);
            return new DataDirLock(channel, lock);
        } catch (IOException e) {
            closeQuietly(channel);
            throw new DevDirException("cannot lock the data directory " + dir + " (" + file + "): " + e.getMessage(), e);
        }
    }

    private static String readHolder(FileChannel channel) throws IOException {
        ByteBuffer buf = ByteBuffer.allocate(32);
        channel.read(buf, 0);
        return new String(buf.array(), 0, buf.position(), StandardCharsets.US_ASCII).strip();
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // already failing with a better message
            }
        }
    }

    /** Releases the lock; the file stays (a later {@code outrun dev} rewrites it). */
    @Override
    public void close() {
        try {
            lock.release();
        } catch (IOException ignored) {
            // closing the channel releases it too
        }
        closeQuietly(channel);
    }
}
