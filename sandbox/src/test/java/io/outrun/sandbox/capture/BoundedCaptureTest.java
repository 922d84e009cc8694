package io.outrun.sandbox.capture;

import io.outrun.model.output.Captured;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class BoundedCaptureTest {

    static BoundedCapture capture(int maxBytes, String... chunks) {
        BoundedCapture capture = new BoundedCapture(maxBytes);
        for (String chunk : chunks) {
            capture.append(chunk.getBytes(StandardCharsets.UTF_8));
        }
        return capture;
    }

    static String utf8(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    @Test
    void keepsShortOutputWhole() {
        Captured captured = capture(16, "hello").snapshot();
        assertThat(captured.text()).isEqualTo("hello");
        assertThat(captured.totalBytes()).isEqualTo(5);
        assertThat(captured.truncated()).isFalse();
    }

    @Test
    void outputOfExactlyTheCapIsNotTruncated() {
        Captured captured = capture(8, "abcdefgh").snapshot();
        assertThat(utf8(captured.head())).isEqualTo("abcd");
        assertThat(utf8(captured.tail())).isEqualTo("efgh");
        assertThat(captured.truncated()).isFalse();
        assertThat(captured.text()).isEqualTo("abcdefgh");
    }

    @Test
    void keepsHeadAndTailOfFloodedOutputAndCountsTheDroppedMiddle() {
        Captured captured = capture(8, "abcdefghij").snapshot();
        assertThat(utf8(captured.head())).isEqualTo("abcd");
        assertThat(utf8(captured.tail())).isEqualTo("ghij");
        assertThat(captured.totalBytes()).isEqualTo(10);
        assertThat(captured.droppedBytes()).isEqualTo(2);
        assertThat(captured.truncated()).isTrue();
        assertThat(captured.text()).isEqualTo("abcd" + Captured.marker(2) + "ghij");
    }

    @Test
    void manySmallAppendsKeepWhatOneBigAppendKeeps() {
        StringBuilder all = new StringBuilder();
        BoundedCapture small = new BoundedCapture(100);
        for (int i = 0; i < 1000; i++) {
            String piece = i + ",";
            all.append(piece);
            small.append(piece.getBytes(StandardCharsets.UTF_8));
        }
        Captured big = capture(100, all.toString()).snapshot();
        Captured pieces = small.snapshot();
        assertThat(pieces.head()).isEqualTo(big.head());
        assertThat(pieces.tail()).isEqualTo(big.tail());
        assertThat(pieces.totalBytes()).isEqualTo(all.length());
        assertThat(utf8(pieces.tail())).endsWith("998,999,");
    }

    @Test
    void appendsCopyTheCallersBuffer() {
        BoundedCapture capture = new BoundedCapture(8);
        byte[] buffer = "ab".getBytes(StandardCharsets.UTF_8);
        capture.append(buffer);
        buffer[0] = 'X';
        assertThat(capture.snapshot().text()).isEqualTo("ab");
    }

    @Test
    void headEndingMidCharacterMovesTheCharacterToTheTailWhenNothingWasDropped() {
        // Head holds 4 bytes: "abc" and the first byte of "é"; the second byte went to the ring.
        Captured captured = capture(8, "abcé", "xyz").snapshot();
        assertThat(utf8(captured.head())).isEqualTo("abc");
        assertThat(utf8(captured.tail())).isEqualTo("éxyz");
        assertThat(captured.droppedBytes()).isZero();
        assertThat(captured.text()).isEqualTo("abcéxyz");
    }

    @Test
    void cutsHeadAndTailOnCharacterBoundariesWhenTheMiddleIsDropped() {
        // 16 bytes: "abc" + é (2) + 6 × "m" + é (2) + "xyz"; the ring keeps the last 4: é's second byte + "xyz".
        Captured captured = capture(8, "abcé", "mmmmmm", "éxyz").snapshot();
        assertThat(utf8(captured.head())).isEqualTo("abc");
        assertThat(utf8(captured.tail())).isEqualTo("xyz");
        assertThat(captured.totalBytes()).isEqualTo(16);
        assertThat(captured.droppedBytes()).isEqualTo(10);
        assertThat(captured.text()).isEqualTo("abc" + Captured.marker(10) + "xyz").doesNotContain("\uFFFD");
    }

    @Test
    void sinceACursorAnswersOnlyWhatFollowsIt() {
        Captured captured = capture(8, "abcdefghij").snapshot();
        assertThat(captured.since(0).text()).isEqualTo("abcd" + Captured.marker(2) + "ghij");
        assertThat(captured.since(2).text()).isEqualTo("cd" + Captured.marker(2) + "ghij");
        // A cursor inside the dropped middle starts with the marker of what it missed.
        Captured.Slice inMiddle = captured.since(5);
        assertThat(inMiddle.text()).isEqualTo(Captured.marker(1) + "ghij");
        assertThat(inMiddle.droppedBytes()).isEqualTo(1);
        Captured.Slice inTail = captured.since(7);
        assertThat(inTail.text()).isEqualTo("hij");
        assertThat(inTail.nextCursor()).isEqualTo(10);
        assertThat(inTail.droppedBytes()).isZero();
        assertThat(captured.since(10).text()).isEmpty();
        assertThat(captured.since(99).text()).isEmpty();
        assertThat(captured.since(-5).text()).isEqualTo(captured.text());
    }

    @Test
    void invalidUtf8BecomesReplacementCharacters() {
        BoundedCapture capture = new BoundedCapture(64);
        capture.append(new byte[] {'o', 'k', (byte) 0xff, (byte) 0xfe, 0, (byte) 0xc3, '('});
        Captured captured = capture.snapshot();
        assertThat(captured.totalBytes()).isEqualTo(7);
        assertThat(captured.text()).startsWith("ok\uFFFD\uFFFD\u0000").contains("(");
    }

    @Test
    void rejectsACapBelowTwoBytes() {
        assertThatThrownBy(() -> new BoundedCapture(1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void snapshotsTakenDuringAppendsAreConsistent() throws InterruptedException {
        BoundedCapture capture = new BoundedCapture(1024);
        byte[] chunk = "0123456789".getBytes(StandardCharsets.UTF_8);
        Thread writer = new Thread(() -> {
            for (int i = 0; i < 100_000; i++) {
                capture.append(chunk);
            }
        });
        writer.start();
        long last = 0;
        while (writer.isAlive()) {
            Captured captured = capture.snapshot();
            assertThat(captured.totalBytes()).isGreaterThanOrEqualTo(last);
            assertThat(captured.head().length + captured.tail().length).isLessThanOrEqualTo(1024);
            last = captured.totalBytes();
        }
        writer.join();
        assertThat(capture.snapshot().totalBytes()).isEqualTo(1_000_000);
    }

    @Test
    void aNotedGapIsMarkedWhereItHappenedNeverSilentlyJoined() {
        BoundedCapture capture = capture(1024, "before\n");
        capture.noteGap("[gap]\n");
        capture.append("after\n".getBytes(StandardCharsets.UTF_8));
        assertThat(capture.snapshot().text()).isEqualTo("before\n[gap]\nafter\n");
        assertThat(capture.gaps()).isEqualTo(1);
    }
}
