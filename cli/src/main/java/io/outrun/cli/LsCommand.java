package io.outrun.cli;

import io.outrun.client.OutrunClient;
import io.outrun.client.wire.ExecutionPage;
import io.outrun.client.wire.ExecutionSummary;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Lists the caller's executions, newest first. */
@Command(name = "ls", mixinStandardHelpOptions = true, description = "List your executions, newest first.")
public final class LsCommand extends ClientCommand {

    @Option(names = "--status", description = "Only this status: queued, running, succeeded, failed, timed_out, cancelled")
    String status;

    @Option(names = {"-n", "--limit"}, defaultValue = "20", description = "How many (default ${DEFAULT-VALUE}, max 100)")
    int limit;

    @Option(names = "--after", description = "Continue after this page cursor (printed at the end of a full page)")
    String after;

    @Option(names = "--label", paramLabel = "KEY=VALUE", description = "Only executions carrying this label (repeatable),"
            + " e.g. schedule=nightly for a schedule's runs")
    Map<String, String> labels;

    @Option(names = "--json", description = "Print the page as JSON")
    boolean json;

    @Override
    int run(OutrunClient client) {
        if (limit < 1) {
            throw new UsageException("--limit must be at least 1, got " + limit);
        }
        ExecutionPage page = client.list(status, labels == null ? Map.of() : labels, limit, after);
        if (json) {
            printJson(page);
            return 0;
        }
        out().printf("%-36s  %-10s  %4s  %-20s  %9s  %s%n", "ID", "STATUS", "EXIT", "CREATED", "DURATION", "COMMAND");
        for (ExecutionSummary s : page.executions()) {
            String created = s.createdAt() == null ? "-" : s.createdAt().toString().substring(0, 19).replace('T', ' ');
            out().printf("%-36s  %-10s  %4s  %-20s  %9s  %s%n", s.executionId(), s.status(),
                    s.exitCode() == null ? "-" : s.exitCode(), created,
                    s.durationMs() == null ? "-" : Format.duration(s.durationMs()), Format.oneLine(s.command(), 60));
        }
        if (page.next() != null) {
            err().println("more: outrun ls --after " + page.next());
        }
        return 0;
    }
}
