package io.outrun.core.books;

import io.outrun.model.output.Captured;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The summary a job's dashboard page gets stays a few short lines, whatever the command printed. */
class SummaryTest {

    @Test
    void keepsTheLastFiveLinesOfAStreamEachCutToItsWidth() {
        StringBuilder out = new StringBuilder();
        for (int i = 1; i <= 40; i++) {
            out.append("line ").append(i).append('\n');
        }
        out.append("x".repeat(500)).append("\n\n\n");
        List<String> lines = new ArrayList<>();
        Summary.lastLines("stdout", captured(out.toString()), lines);
        assertThat(lines).hasSize(6);
        assertThat(lines.get(0)).startsWith("last 5 lines of stdout (");
        assertThat(lines.subList(1, 5)).containsExactly("  line 37", "  line 38", "  line 39", "  line 40");
        assertThat(lines.get(5)).hasSize(2 + 200).endsWith("…");
    }

    @Test
    void saysNothingOfAnEmptyStream() {
        List<String> lines = new ArrayList<>();
        Summary.lastLines("stderr", Captured.EMPTY, lines);
        assertThat(lines).isEmpty();
    }

    @Test
    void errorOfAFailedExecutionIsOneLineWithoutStackTrace() {
        io.outrun.core.books.JobFailure f = new io.outrun.core.books.JobFailure("command_failed: The command exited with code 3; see stderr.");
        assertThat(f.getStackTrace()).isEmpty();
        java.io.StringWriter w = new java.io.StringWriter();
        f.printStackTrace(new java.io.PrintWriter(w));
        assertThat(w.toString().strip()).isEqualTo("command_failed: The command exited with code 3; see stderr.");
    }

    @Test
    void durationsReadAsPeopleSayThem() {
        assertThat(Summary.human(Duration.ofMillis(640))).isEqualTo("0.6 s");
        assertThat(Summary.human(Duration.ofSeconds(754))).isEqualTo("12 min 34 s");
        assertThat(Summary.human(Duration.ofMinutes(135))).isEqualTo("2 h 15 min");
    }

    private static Captured captured(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        return new Captured(new byte[0], bytes, bytes.length);
    }
}
