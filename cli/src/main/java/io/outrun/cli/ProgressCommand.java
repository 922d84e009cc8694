package io.outrun.cli;

import io.outrun.client.ApiException;
import io.outrun.client.OutrunClient;
import io.outrun.client.wire.ProgressView;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Reports the progress of the run it is called from (issue 31): inside a run, OUTRUN_API,
 * OUTRUN_API_TOKEN and OUTRUN_EXECUTION_ID say where, as whom and for which execution. Quiet on
 * success, so it does not clutter the run's output.
 */
@Command(name = "progress", mixinStandardHelpOptions = true, description = {
        "Report this run's progress, from inside the run: outrun progress 40 \"2 of 5 shards\".",
        "It shows in every poll, in outrun status and in the dashboard; the latest report is kept.",
        "Quiet on success; a report sooner than 250 ms after the last is retried once a little later."})
public final class ProgressCommand extends ClientCommand {

    static final String EXECUTION_ENV = "OUTRUN_EXECUTION_ID";
    /** Attempts when the API answers progress_too_fast (one report per 250 ms per execution). */
    private static final int TOO_FAST_TRIES = 3;

    @Parameters(index = "0", paramLabel = "PERCENT", description = "0 to 100, or - for a message alone")
    String percent;

    @Parameters(index = "1", arity = "0..1", paramLabel = "MESSAGE", description = "What it is doing, up to 500 characters")
    String message;

    @Option(names = "--id", defaultValue = "${env:" + EXECUTION_ENV + "}", description = "The execution (env "
            + EXECUTION_ENV + ", which every run has); only the run's own token may report for it")
    String id;

    @Option(names = "--json", description = "Print the stored progress as JSON")
    boolean json;

    @Override
    int run(OutrunClient client) throws InterruptedException {
        if (id == null || id.isBlank()) {
            throw new UsageException("no execution: outrun progress reports for the run it is called from ("
                    + EXECUTION_ENV + " is unset here); pass --id ID to name one");
        }
        Integer pct = percent();
        if (pct == null && message == null) {
            throw new UsageException("nothing to report: give a PERCENT (0 to 100), a MESSAGE, or both");
        }
        for (int attempt = 1; ; attempt++) {
            try {
                ProgressView stored = client.progress(id.strip(), pct, message);
                if (json) {
                    printJson(stored);
                }
                return 0;
            } catch (ApiException e) {
                if (!"progress_too_fast".equals(e.code()) || attempt >= TOO_FAST_TRIES) {
                    throw e;
                }
                Thread.sleep(300);
            }
        }
    }

    private Integer percent() {
        if (percent.equals("-")) {
            return null;
        }
        String digits = percent.endsWith("%") ? percent.substring(0, percent.length() - 1) : percent;
        try {
            double value = Double.parseDouble(digits);
            if (value >= 0 && value <= 100) {
                return (int) Math.floor(value);
            }
        } catch (NumberFormatException e) {
            // answered below
        }
        throw new UsageException("PERCENT must be a number from 0 to 100 (or - for a message alone), got: " + percent);
    }
}
