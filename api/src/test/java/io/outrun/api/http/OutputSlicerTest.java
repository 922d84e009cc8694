package io.outrun.api.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.model.output.Captured;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Pages of output by byte budget: contiguous, cut on characters, every kept byte exactly once. */
class OutputSlicerTest {

    // Two-, three- and four-byte characters among ASCII, so that budgets fall inside characters.
    private static final String TEXT = "abc é 漢字 𝄞 line\n".repeat(40);

    @ParameterizedTest
    @ValueSource(longs = {16, 17, 18, 19, 31, 100, 1000})
    void pagesOfAWholeStreamJoinToItExactly(long budget) {
        byte[] bytes = TEXT.getBytes(StandardCharsets.UTF_8);
        Captured all = Captured.ofRaw(bytes, new byte[0], bytes.length);
        assertThat(pages(all, budget, true)).isEqualTo(TEXT);
    }

    @ParameterizedTest
    @ValueSource(longs = {16, 23, 64, 5000})
    void pagesAcrossTheDroppedMiddleHaveItsMarkerOnceAndNothingElseMissing(long budget) {
        byte[] bytes = TEXT.getBytes(StandardCharsets.UTF_8);
        Captured kept = Captured.ofRaw(Arrays.copyOf(bytes, 101), Arrays.copyOfRange(bytes, bytes.length - 203, bytes.length),
                bytes.length);
        assertThat(pages(kept, budget, true)).isEqualTo(OutputSlicer.since(kept, 0, true).text())
                .contains(Captured.marker(kept.droppedBytes()));
    }

    @ParameterizedTest
    @ValueSource(longs = {16, 19, 40})
    void whileRunningAPageStopsBeforeACharacterStillBeingWritten(long budget) {
        byte[] bytes = "ab漢".getBytes(StandardCharsets.UTF_8);
        Captured running = Captured.ofRaw(Arrays.copyOf(bytes, bytes.length - 1), new byte[0], bytes.length - 1);
        OutputSlicer.Slice slice = OutputSlicer.since(running, 0, false, budget);
        assertThat(slice.text()).isEqualTo("ab");
        assertThat(slice.next()).isEqualTo(2);
        assertThat(slice.more()).isFalse();
    }

    @ParameterizedTest
    @ValueSource(longs = {16, 17, 18})
    void aPageNeverSplitsACharacter(long budget) {
        byte[] bytes = "𝄞".repeat(20).getBytes(StandardCharsets.UTF_8);
        Captured c = Captured.ofRaw(bytes, new byte[0], bytes.length);
        OutputSlicer.Slice first = OutputSlicer.since(c, 0, true, budget);
        assertThat(first.next()).isEqualTo(16);
        assertThat(first.text()).isEqualTo("𝄞".repeat(4));
        assertThat(first.more()).isTrue();
    }

    /** Reads {@code c} page by page from the start, checking each page's bound and progress. */
    private static String pages(Captured c, long budget, boolean complete) {
        StringBuilder out = new StringBuilder();
        long cursor = 0;
        for (int i = 0; i < 100_000; i++) {
            OutputSlicer.Slice page = OutputSlicer.since(c, cursor, complete, budget);
            String kept = page.text().replace(Captured.marker(page.droppedBytes()), "");
            assertThat(kept.getBytes(StandardCharsets.UTF_8).length).as("page " + i).isLessThanOrEqualTo((int) budget);
            out.append(page.text());
            if (!page.more()) {
                assertThat(page.next()).isEqualTo(c.totalBytes());
                return out.toString();
            }
            assertThat(page.next()).as("progress").isGreaterThan(cursor);
            cursor = page.next();
        }
        throw new AssertionError("no end");
    }
}
