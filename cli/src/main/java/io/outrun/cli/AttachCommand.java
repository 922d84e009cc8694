package io.outrun.cli;

import io.outrun.client.OutrunClient;
import io.outrun.client.OutrunException;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * Attaches this terminal to a running command: what you type goes to its stdin (a line at a
 * time, as the terminal hands it over; Ctrl-D closes it), its output comes back live until it ends.
 */
@Command(name = "attach", mixinStandardHelpOptions = true, description = {
        "Attach to an execution submitted with --stdin or --tty: your input goes to its stdin (Ctrl-D sends end of"
                + " file), its output streams back until it ends. Exits with its exit code.",
        "Detaching (Ctrl-C) leaves it running; attach again at any time."})
public final class AttachCommand extends ClientCommand {

    @Parameters(index = "0", paramLabel = "ID")
    String id;

    @Override
    int run(OutrunClient client) {
        Thread typing = new Thread(() -> forward(client, System.in), "outrun-attach-stdin");
        typing.setDaemon(true);
        typing.start();
        return followToEnd(client, id, false);
    }

    /** Sends what arrives on {@code in} as it arrives; its end closes the command's stdin. */
    private void forward(OutrunClient client, InputStream in) {
        byte[] buffer = new byte[64 * 1024];
        try {
            int n;
            while ((n = in.read(buffer)) >= 0) {
                if (n > 0) {
                    client.writeStdin(id, Arrays.copyOf(buffer, n), false);
                }
            }
            client.writeStdin(id, (String) null, true);
        } catch (IOException | OutrunException e) {
            // The command ended (or closed its stdin): its output, which the main thread follows, says how.
            err().println("outrun: input no longer reaches " + id + " (" + e.getMessage() + ")");
            err().flush();
        }
    }
}
