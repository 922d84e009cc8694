package io.outrun.sandbox.capture;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.zip.GZIPOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The whole of one stream, gzipped into a temp file while the run lasts, for streams that outgrow
 * their head+tail bound (a {@link BoundedCapture} starts it at the first byte it would drop, with
 * every byte kept so far). Bounded by a cap on the compressed size: past it, writing stops and the
 * result says the copy is incomplete. Uploaded after the run ends and served as the artifact
 * {@code stdout} or {@code stderr}. Not thread-safe: its capture calls it under its own lock.
 */
public final class FullOutput implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(FullOutput.class);

    private final Path dir;
    private final String prefix;
    private final long cap;
    private Path file;
    private CountingStream counted;
    private GZIPOutputStream gzip;
    private final MessageDigest sha;
    private long rawBytes;
    private boolean complete = true;
    private boolean failed;

    /** @param cap compressed bytes kept at most */
    public FullOutput(Path dir, String prefix, long cap) {
        this.dir = dir;
        this.prefix = prefix;
        this.cap = cap;
        try {
            this.sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The copy as it stands once the stream ended. */
    public record Spooled(Path file, long rawBytes, String sha256, boolean complete) {
    }

    void write(byte[] bytes, int offset, int length) {
        if (!complete || failed || length == 0) {
            return;
        }
        try {
            if (gzip == null) {
                Files.createDirectories(dir);
                file = Files.createTempFile(dir, prefix, ".gz");
                counted = new CountingStream(Files.newOutputStream(file));
                gzip = new GZIPOutputStream(counted, 64 * 1024);
            }
            if (counted.count >= cap) {
                complete = false;
                return;
            }
            gzip.write(bytes, offset, length);
            sha.update(bytes, offset, length);
            rawBytes += length;
        } catch (IOException e) {
            // A full spool disk loses the whole copy, never the run or its bounded output.
            log.warn("cannot keep the full output in {} ({}); only head and tail are kept", dir, e.toString());
            failed = true;
            complete = false;
        }
    }

    /** Ends the file; empty when nothing was spooled or the spool failed. */
    public synchronized java.util.Optional<Spooled> finish() {
        if (gzip == null || failed) {
            return java.util.Optional.empty();
        }
        try {
            gzip.finish();
            gzip.flush();
            counted.close();
        } catch (IOException e) {
            log.warn("cannot end the full output in {} ({})", file, e.toString());
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(new Spooled(file, rawBytes, HexFormat.of().formatHex(sha.digest()), complete));
    }

    @Override
    public void close() {
        try {
            if (counted != null) {
                counted.close();
            }
            if (file != null) {
                Files.deleteIfExists(file);
            }
        } catch (IOException e) {
            log.debug("cannot remove spool file {}: {}", file, e.toString());
        }
    }

    private static final class CountingStream extends OutputStream {
        private final OutputStream out;
        long count;
        private boolean closed;

        CountingStream(OutputStream out) {
            this.out = out;
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            count += len;
        }

        @Override
        public void flush() throws IOException {
            out.flush();
        }

        @Override
        public void close() throws IOException {
            if (!closed) {
                closed = true;
                out.close();
            }
        }
    }
}
