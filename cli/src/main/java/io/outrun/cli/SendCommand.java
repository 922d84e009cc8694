package io.outrun.cli;

import io.outrun.client.OutrunClient;
import io.outrun.client.wire.OutputChunk;
import io.outrun.client.wire.StdinWritten;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Writes a line (or bytes) to the stdin of a running command, and prints what it answered. */
@Command(name = "send", mixinStandardHelpOptions = true, description = {
        "Write TEXT and a newline to the stdin of an execution submitted with --stdin or --tty, then print what"
                + " it printed in answer (waiting up to --wait-ms for it).",
        "Writes reach the command in order, each once; a re-run attempt starts with everything written so far."})
public final class SendCommand extends ClientCommand {

    @Parameters(index = "0", paramLabel = "ID")
    String id;

    @Parameters(index = "1..*", arity = "0..*", paramLabel = "TEXT", description = "What to type (words joined by"
            + " spaces); none with --eof closes stdin only")
    List<String> text;

    @Option(names = {"-n", "--no-newline"}, description = "Send TEXT as it is, without a newline after it")
    boolean noNewline;

    @Option(names = "--eof", description = "Close the command's stdin after TEXT (it reads end of file)")
    boolean eof;

    @Option(names = "--wait-ms", defaultValue = "2000", description = "How long to wait for its answer (default"
            + " ${DEFAULT-VALUE}; 0: print nothing)")
    long waitMs;

    @Override
    int run(OutrunClient client) {
        String typed = text == null || text.isEmpty() ? "" : String.join(" ", text) + (noNewline ? "" : "\n");
        if (typed.isEmpty() && !eof) {
            throw new UsageException("nothing to send: give TEXT, or --eof to close the command's stdin");
        }
        StdinWritten w = client.writeStdin(id, typed, eof);
        if (waitMs > 0) {
            OutputChunk answer = client.output(id, w.cursor(), Math.min(waitMs, 30_000));
            out().print(answer.stdout().text());
            err().print(answer.stderr().text());
            out().flush();
            if (answer.done()) {
                err().println("outrun: execution " + id + " " + answer.status());
            }
        }
        if (eof) {
            err().println("outrun: stdin of " + id + " closed after " + w.stdin().bytes() + " bytes");
        }
        return 0;
    }
}
