package io.outrun.cli;

import io.outrun.client.OutrunClient;
import io.outrun.client.wire.ExecutionView;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Cancels a queued or running execution. */
@Command(name = "cancel", mixinStandardHelpOptions = true, description = "Cancel a queued or running execution.")
public final class CancelCommand extends ClientCommand {

    @Parameters(index = "0", paramLabel = "ID")
    String id;

    @Option(names = "--json", description = "Print the execution as JSON")
    boolean json;

    @Override
    int run(OutrunClient client) {
        ExecutionView v = client.cancel(id);
        if (json) {
            printJson(v);
        } else if (v.finished()) {
            out().println(v.executionId() + " " + v.status());
        } else {
            out().println(v.executionId() + " cancel requested; its worker kills it within seconds");
        }
        return 0;
    }
}
