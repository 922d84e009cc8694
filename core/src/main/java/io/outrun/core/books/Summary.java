package io.outrun.core.books;

import io.outrun.core.execution.Execution;
import io.outrun.model.output.Captured;
import io.outrun.core.store.OutputStore;
import io.outrun.core.store.SubmissionStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The lines an execution's JobRunr job page shows at its end: whose execution, how it ended
 * (attempt, node, exit code, duration), why, and the last lines of each stream. Written once,
 * with the job's end, so a running job's JSON stays small.
 */
public final class Summary {

    /** Last lines of each stream shown on the job's page, each cut to a width. */
    private static final int TAIL_LINES = 5;
    private static final int LINE_WIDTH = 200;
    private static final int TAIL_BYTES = 2048;

    private Summary() {
    }

    /**
     * The summary of attempt {@code attempt} of {@code e} on {@code node}, as it ended; the tail of
     * its output is read from {@code store} only when it printed something.
     */
    public static List<String> of(Execution e, int attempt, String node, String why, SubmissionStore store) {
        List<String> lines = new ArrayList<>();
        lines.add("execution " + e.id() + " of " + e.owner() + " (outrun status " + e.id() + ", GET /v1/executions/"
                + e.id() + ")");
        Duration took = e.duration(Instant.now());
        lines.add(e.status().wire() + " · attempt " + Math.max(attempt, e.attempt()) + " of " + e.maxAttempts()
                + " · node " + node
                + (e.exitCode() != null ? " · exit code " + e.exitCode() : "")
                + (took != null ? " · " + human(took) : ""));
        if (why != null && !why.isBlank()) {
            lines.add(why.strip());
        }
        if (e.attempt() == attempt && (e.stdout().totalBytes() > 0 || e.stderr().totalBytes() > 0)) {
            try {
                Optional<Execution> withTail = store.find(e.id(), OutputStore.Read.since(
                        e.stdout().totalBytes() - TAIL_BYTES, e.stderr().totalBytes() - TAIL_BYTES));
                withTail.ifPresent(t -> {
                    lastLines("stdout", t.stdout(), lines);
                    lastLines("stderr", t.stderr(), lines);
                });
            } catch (RuntimeException ex) {
                lines.add("(the last lines of output could not be read: " + ex.getMessage() + ")");
            }
        }
        return lines;
    }

    static void lastLines(String stream, Captured captured, List<String> lines) {
        if (captured == null || captured.totalBytes() == 0) {
            return;
        }
        String text = captured.since(captured.totalBytes() - TAIL_BYTES).text();
        String[] all = text.split("\n", -1);
        int end = all.length;
        while (end > 0 && all[end - 1].isBlank()) {
            end--;
        }
        int start = Math.max(0, end - TAIL_LINES);
        lines.add("last " + (end - start) + " lines of " + stream + " (" + captured.totalBytes() + " bytes in all):");
        for (int i = start; i < end; i++) {
            String line = all[i].stripTrailing();
            lines.add("  " + (line.length() > LINE_WIDTH ? line.substring(0, LINE_WIDTH - 1) + "…" : line));
        }
    }

    static String human(Duration d) {
        long ms = d.toMillis();
        if (ms < 10_000) {
            return String.format(Locale.ROOT, "%.1f s", ms / 1000.0);
        }
        long s = d.toSeconds();
        return s < 3600 ? (s / 60) + " min " + (s % 60) + " s" : (s / 3600) + " h " + (s % 3600 / 60) + " min";
    }
}
