package io.outrun.sandbox.capture;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/** A kept full output is a series of gzip members with seek points that a range read starts from. */
class FullOutputTest {

    @Test
    void eachSeekPointStartsAMemberThatInflatesFromItsRawOffset(@TempDir Path dir) throws IOException {
        byte[] raw = new byte[10 * 1000 + 37];
        for (int i = 0; i < raw.length; i++) {
            raw[i] = (byte) ("line " + (i / 10) + "\n").charAt(i % 7);
        }
        FullOutput out = new FullOutput(dir, "t", Long.MAX_VALUE, 1000);
        // Writes of every size across member boundaries.
        int at = 0;
        for (int n : new int[] {1, 999, 1000, 1, 2500, 3, 4000}) {
            out.write(raw, at, n);
            at += n;
        }
        out.write(raw, at, raw.length - at);
        FullOutput.Spooled spooled = out.finish().orElseThrow();
        byte[] file = Files.readAllBytes(spooled.file());
        long[] points = spooled.seekPoints();
        assertThat(points.length / 2).as("members of 1000 raw bytes").isEqualTo(11);
        assertThat(spooled.rawBytes()).isEqualTo(raw.length);
        for (int i = 0; i < points.length; i += 2) {
            long rawAt = points[i];
            long fileAt = points[i + 1];
            assertThat(rawAt).isEqualTo(i / 2 * 1000L);
            // As the API reads: from the member's start to the end, through every later member.
            try (InputStream in = new GZIPInputStream(new Unavailable(Arrays.copyOfRange(file, (int) fileAt, file.length)))) {
                assertThat(in.readAllBytes()).as("from seek point " + i / 2)
                        .isEqualTo(Arrays.copyOfRange(raw, (int) rawAt, raw.length));
            }
        }
        try (InputStream whole = new GZIPInputStream(new ByteArrayInputStream(file))) {
            assertThat(new String(whole.readAllBytes(), StandardCharsets.ISO_8859_1))
                    .isEqualTo(new String(raw, StandardCharsets.ISO_8859_1));
        }
        out.close();
    }

    /** A stream that says at most one byte is available, as a stored value does between its chunks. */
    private static final class Unavailable extends ByteArrayInputStream {
        Unavailable(byte[] bytes) {
            super(bytes);
        }

        @Override
        public synchronized int available() {
            return pos < count ? 1 : 0;
        }
    }
}
