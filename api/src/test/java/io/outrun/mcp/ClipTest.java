package io.outrun.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ClipTest {

    @Test
    void keepsTextWithinTheLimitWhole() {
        assertThat(Clip.text("short", 100, "how")).isEqualTo("short");
        assertThat(Clip.text(null, 100, "how")).isNull();
    }

    @Test
    void keepsHeadAndTailOfAFloodAndSaysHowMuchWasLeftOutAndHowToReadIt() {
        String text = "H".repeat(1000) + "M".repeat(10_000) + "T".repeat(3000);
        String clipped = Clip.text(text, 4000, "read_output without a cursor reads all of it");
        assertThat(clipped).startsWith("H".repeat(1000)).endsWith("T".repeat(3000))
                .contains("[… 10000 characters not shown here; read_output without a cursor reads all of it …]")
                .doesNotContain("M");
    }

    @Test
    void neverSplitsACharacterOutsideTheBasicPlane() {
        String smile = "\uD83D\uDE00";
        String text = smile.repeat(5000);
        String clipped = Clip.text(text, 1001, "x");
        String head = clipped.substring(0, clipped.indexOf("\n[…"));
        String tail = clipped.substring(clipped.indexOf("…]\n") + 3);
        assertThat(head.length() % 2).isZero();
        assertThat(tail.length() % 2).isZero();
        assertThat(Character.isHighSurrogate(tail.charAt(0))).isTrue();
    }
}
