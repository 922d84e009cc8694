package io.outrun.cli;

import io.outrun.client.OutrunClient;
import io.outrun.client.wire.ExecutionView;
import java.time.Instant;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Shows one execution: state, exit code, times, error and what to do next. */
@Command(name = "status", mixinStandardHelpOptions = true, description = "Show an execution's state.")
public final class StatusCommand extends ClientCommand {

    @Parameters(index = "0", paramLabel = "ID")
    String id;

    @Option(names = "--json", description = "Print the execution as JSON (output included)")
    boolean json;

    @Option(names = "--wait-ms", defaultValue = "0", description = "Wait up to this long for the end (max 30000)")
    long waitMs;

    @Override
    int run(OutrunClient client) {
        if (waitMs < 0) {
            throw new UsageException("--wait-ms must be at least 0, got " + waitMs);
        }
        ExecutionView v = client.get(id, waitMs, json ? "full" : "none");
        if (json) {
            printJson(v);
            return 0;
        }
        row("id", v.executionId());
        row("status", v.status() + (v.cancelRequested() && !v.finished() ? " (cancel requested)" : "")
                + "  attempt " + v.attempt() + "/" + v.maxAttempts());
        row("exit code", v.exitCode() == null ? "-" : String.valueOf(v.exitCode()));
        row("created", String.valueOf(v.createdAt()));
        row("duration", v.durationMs() == null ? "-" : Format.duration(v.durationMs()));
        row("output", "stdout " + v.stdout().totalBytes() + " B" + (v.stdout().truncated() ? " (truncated)" : "")
                + ", stderr " + v.stderr().totalBytes() + " B" + (v.stderr().truncated() ? " (truncated)" : ""));
        row("command", Format.oneLine(v.command(), 100));
        if (v.progress() != null) {
            row("progress", Format.progress(v.progress(), Instant.now()));
        }
        if (v.parentId() != null) {
            row("parent", v.parentId() + (Boolean.FALSE.equals(v.cancelWithParent()) ? "  (outlives it)"
                    : "  (cancelled with it)"));
        }
        if (v.identity() != null) {
            row("identity", "OUTRUN_ID_TOKEN for " + v.identity().audience());
        }
        if (v.error() != null) {
            row("error", v.error().code() + ": " + v.error().message());
        }
        if (!v.finished()) {
            // The API's guidance names HTTP routes; at a terminal the same steps are these commands.
            row("next", (v.cancelRequested() ? "cancel requested. " : "") + "follow: outrun logs -f " + v.executionId()
                    + "   wait for the end: outrun status --wait-ms 30000 " + v.executionId()
                    + (v.cancelRequested() ? "" : "   cancel: outrun cancel " + v.executionId()));
        } else if (v.guidance() != null) {
            row("next", v.guidance() + "  Output: outrun logs " + v.executionId());
        }
        return 0;
    }

    private void row(String name, String value) {
        out().printf("%-10s %s%n", name, value);
    }
}
