package io.outrun.sandbox.capture;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.zip.GZIPOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The whole of one stream, gzipped into a temp file while the run lasts, for streams that outgrow
 * their head+tail bound (a {@link BoundedCapture} starts it at the first byte it would drop, with
 * every byte kept so far). Bounded by a cap on the compressed size: past it, writing stops and the
 * result says the copy is incomplete. Uploaded after the run ends and served as the artifact
 * {@code stdout} or {@code stderr}. Not thread-safe: its capture calls it under its own lock.
 *
 * <p>The file is a series of gzip members, one per {@link #SEGMENT} bytes of output (still one
 * valid gzip stream), and {@link Spooled#seekPoints} says where each starts: a read of a range
 * inflates from the member holding its first byte, never from byte 0 (3 GB of output cost 26 s of
 * CPU per read of its last bytes before).
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
    /** Raw bytes per gzip member. */
    private final long segment;
    /** (raw offset, file offset) of each member's start. */
    private final List<long[]> seekPoints = new ArrayList<>();

    /** Raw bytes of output per gzip member: a range read inflates at most this much before its first byte. */
    public static final long SEGMENT = 4L << 20;

    /** @param cap compressed bytes kept at most */
    public FullOutput(Path dir, String prefix, long cap) {
        this(dir, prefix, cap, SEGMENT);
    }

    FullOutput(Path dir, String prefix, long cap, long segment) {
        this.segment = segment;
        this.dir = dir;
        this.prefix = prefix;
        this.cap = cap;
        try {
            this.sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The copy as it stands once the stream ended.
     *
     * @param seekPoints pairs (raw offset, file offset), flattened: where each gzip member starts
     */
    public record Spooled(Path file, long rawBytes, String sha256, boolean complete, long[] seekPoints) {
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
                startMember();
            }
            while (length > 0) {
                if (counted.count >= cap) {
                    complete = false;
                    return;
                }
                long room = segment - (rawBytes - seekPoints.get(seekPoints.size() - 1)[0]);
                if (room == 0) {
                    // The member's trailer (and its deflater freed): the file now ends where the next starts.
                    gzip.close();
                    startMember();
                    continue;
                }
                int n = (int) Math.min(length, room);
                gzip.write(bytes, offset, n);
                sha.update(bytes, offset, n);
                rawBytes += n;
                offset += n;
                length -= n;
            }
        } catch (IOException e) {
            // A full spool disk loses the whole copy, never the run or its bounded output.
            log.warn("cannot keep the full output in {} ({}); only head and tail are kept", dir, e.toString());
            failed = true;
            complete = false;
        }
    }

    private void startMember() throws IOException {
        seekPoints.add(new long[] {rawBytes, counted.count});
        gzip = new GZIPOutputStream(new MemberOut(counted), 64 * 1024);
    }

    /** Ends the file; empty when nothing was spooled or the spool failed. */
    public synchronized Optional<Spooled> finish() {
        if (gzip == null || failed) {
            return Optional.empty();
        }
        try {
            gzip.close(); // the last member's trailer; the file stays open until:
            counted.close();
        } catch (IOException e) {
            log.warn("cannot end the full output in {} ({})", file, e.toString());
            return Optional.empty();
        }
        long[] points = new long[seekPoints.size() * 2];
        for (int i = 0; i < seekPoints.size(); i++) {
            points[2 * i] = seekPoints.get(i)[0];
            points[2 * i + 1] = seekPoints.get(i)[1];
        }
        return Optional.of(new Spooled(file, rawBytes, HexFormat.of().formatHex(sha.digest()), complete, points));
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

    /** What one member writes to: closing it (the member's end) leaves the file open for the next. */
    private static final class MemberOut extends FilterOutputStream {
        MemberOut(OutputStream out) {
            super(out);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
        }

        @Override
        public void close() throws IOException {
            out.flush();
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
