package io.outrun.cli;

import io.outrun.client.OutrunClient;
import io.outrun.client.wire.OutputChunk;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Prints an execution's output: what is kept so far, or live until the end with {@code --follow}. */
@Command(name = "logs", mixinStandardHelpOptions = true, description = {
        "Print an execution's output (stdout to stdout, stderr to stderr), then its cursor on stderr.",
        "With --follow, exits with the command's exit code (124 timed out, 130 cancelled)."})
public final class LogsCommand extends ClientCommand {

    @Parameters(index = "0", paramLabel = "ID")
    String id;

    @Option(names = {"-f", "--follow"}, description = "Stream live until the end")
    boolean follow;

    @Option(names = "--json", description = "Print output chunks as JSON lines")
    boolean json;

    @Option(names = "--cursor", description = "Print only the output after this cursor (the one the previous"
            + " `outrun logs` printed last)")
    String cursor;

    @Override
    int run(OutrunClient client) {
        if (follow) {
            return followToEnd(client, id, json);
        }
        OutputChunk chunk = client.output(id, cursor, 0);
        if (json) {
            printJson(chunk);
        } else {
            out().print(chunk.stdout().text());
            err().print(chunk.stderr().text());
            // On stderr, so stdout stays the command's own output; the next call reads on from here.
            err().println("outrun: " + (chunk.done() ? "end of output" : chunk.status()) + "; cursor " + chunk.cursor()
                    + (chunk.done() ? "" : "  (outrun logs " + id + " --cursor " + chunk.cursor() + " prints only what follows)"));
        }
        return 0;
    }
}
