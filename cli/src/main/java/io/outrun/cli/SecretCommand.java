package io.outrun.cli;

import io.outrun.client.OutrunClient;
import io.outrun.client.wire.SecretList;
import java.io.Console;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Your secrets: set (the value from stdin, a file or a prompt, never the command line, where
 * shell history and {@code ps} would keep it), list (names only) and remove. A run names the
 * ones it needs with {@code outrun run --secret NAME}.
 */
@Command(name = "secret", mixinStandardHelpOptions = true, description = "Set, list or remove your secrets.",
        subcommands = {SecretCommand.Set.class, SecretCommand.Ls.class, SecretCommand.Rm.class})
public final class SecretCommand implements Runnable {

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    @Command(name = "set", mixinStandardHelpOptions = true, description = "Set a secret. The value is read from"
            + " stdin (one trailing newline dropped), from --from-file, or asked for without echo at a terminal.")
    static final class Set extends ClientCommand {

        @Parameters(index = "0", paramLabel = "NAME", description = "The secret's name, which is the run's env variable")
        String name;

        @Option(names = "--from-file", paramLabel = "PATH", description = "Read the value from this file, as it is")
        Path file;

        @Override
        int run(OutrunClient client) throws IOException {
            SecretList.Item set = client.putSecret(name, value());
            out().println("secret " + set.name() + " set (" + set.updatedAt() + "); a run gets it with --secret " + set.name());
            return 0;
        }

        private String value() throws IOException {
            if (file != null) {
                return Files.readString(file, StandardCharsets.UTF_8);
            }
            Console console = System.console();
            if (console != null) {
                char[] typed = console.readPassword("value of %s (not shown): ", name);
                if (typed == null) {
                    throw new UsageException("no value given for secret " + name);
                }
                return new String(typed);
            }
            InputStream in = System.in;
            String value = new String(in.readNBytes(1 << 20), StandardCharsets.UTF_8);
            // `echo value | outrun secret set NAME` adds a newline the secret does not have.
            return value.endsWith("\r\n") ? value.substring(0, value.length() - 2)
                    : value.endsWith("\n") ? value.substring(0, value.length() - 1) : value;
        }
    }

    @Command(name = "ls", mixinStandardHelpOptions = true, description = "List your secrets: names and times, never values.")
    static final class Ls extends ClientCommand {

        @Option(names = "--json", description = "Print the list as JSON")
        boolean json;

        @Override
        int run(OutrunClient client) {
            SecretList list = client.secrets();
            if (json) {
                printJson(list);
            } else if (list.secrets().isEmpty()) {
                err().println("no secrets; set one with: outrun secret set NAME < value-file");
            } else {
                for (SecretList.Item s : list.secrets()) {
                    out().println(s.name() + "  updated " + s.updatedAt());
                }
            }
            return 0;
        }
    }

    @Command(name = "rm", mixinStandardHelpOptions = true, description = "Remove a secret.")
    static final class Rm extends ClientCommand {

        @Parameters(index = "0", paramLabel = "NAME")
        String name;

        @Override
        int run(OutrunClient client) {
            client.deleteSecret(name);
            out().println("secret " + name + " removed");
            return 0;
        }
    }
}
