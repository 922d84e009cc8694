package io.outrun.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.outrun.client.OutrunClient;
import io.outrun.client.wire.Json;
import io.outrun.client.wire.OutputChunk;
import java.io.PrintWriter;
import java.time.Duration;

/**
 * Streams an execution's output live by long-polling with its cursor: stdout to out, stderr to
 * err, nothing repeated or skipped. On a terminal it keeps a status line (state and elapsed
 * time) at the bottom of stderr, cleared before each piece of output; piped, it prints only the
 * output. With {@code json}, each chunk is one JSON line on out.
 */
final class Follower {

    private static final long PIPED_WAIT_MS = 30_000;
    // On a terminal the status line's clock should tick, so polls come back every second.
    private static final long TERMINAL_WAIT_MS = 1_000;

    private final OutrunClient client;
    private final PrintWriter out;
    private final PrintWriter err;
    private final boolean terminal;
    private final boolean json;
    private boolean statusShown;
    // A status line drawn after a partial line would be erased together with that line's text.
    private boolean atLineStart = true;

    Follower(OutrunClient client, PrintWriter out, PrintWriter err, boolean terminal, boolean json) {
        this.client = client;
        this.out = out;
        this.err = err;
        this.terminal = terminal && !json;
        this.json = json;
    }

    /** Follows until the execution has finished and its last output is printed; returns the last chunk. */
    OutputChunk follow(String executionId) {
        long start = System.nanoTime();
        String cursor = null;
        while (true) {
            OutputChunk chunk = client.output(executionId, cursor, terminal ? TERMINAL_WAIT_MS : PIPED_WAIT_MS);
            print(chunk);
            cursor = chunk.cursor();
            if (chunk.done()) {
                clearStatus();
                return chunk;
            }
            if (terminal && atLineStart) {
                showStatus(chunk, Duration.ofNanos(System.nanoTime() - start));
            }
        }
    }

    private void print(OutputChunk chunk) {
        if (json) {
            try {
                out.println(Json.mapper().writeValueAsString(chunk));
            } catch (JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
            out.flush();
            return;
        }
        boolean any = !chunk.stdout().text().isEmpty() || !chunk.stderr().text().isEmpty();
        if (any || chunk.restarted()) {
            clearStatus();
        }
        if (chunk.restarted()) {
            err.println("[outrun] its worker was lost; attempt " + chunk.attempt() + " runs the command again from the start");
        }
        if (!chunk.stdout().text().isEmpty()) {
            out.print(chunk.stdout().text());
            out.flush();
            atLineStart = chunk.stdout().text().endsWith("\n");
        }
        if (!chunk.stderr().text().isEmpty()) {
            err.print(chunk.stderr().text());
            err.flush();
            atLineStart = chunk.stderr().text().endsWith("\n");
        }
    }

    private void showStatus(OutputChunk chunk, Duration elapsed) {
        long s = elapsed.toSeconds();
        err.print("\r\033[K\033[2m[outrun] " + chunk.status() + " " + String.format("%d:%02d", s / 60, s % 60)
                + " · " + chunk.executionId() + "\033[0m");
        err.flush();
        statusShown = true;
    }

    private void clearStatus() {
        if (statusShown) {
            err.print("\r\033[K");
            err.flush();
            statusShown = false;
        }
    }
}
