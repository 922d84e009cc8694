package io.outrun.cli;

import io.outrun.client.OutrunClient;
import io.outrun.client.wire.ArtifactList;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Lists an execution's artifacts, or downloads one (streamed to a file or stdout). */
@Command(name = "get", mixinStandardHelpOptions = true, description = "List an execution's artifacts, or download one:"
        + " outrun get ID (list), outrun get ID NAME [-o FILE|-].")
public final class GetCommand extends ClientCommand {

    @Parameters(index = "0", paramLabel = "ID")
    String id;

    @Parameters(index = "1", arity = "0..1", paramLabel = "NAME", description = "The artifact: its path in the workdir,"
            + " or stdout / stderr (the whole output, when it outgrew its bound)")
    String name;

    @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "Where to write it (default: its base name"
            + " in the current directory; - for stdout)")
    String output;

    @Option(names = "--json", description = "Print the list as JSON")
    boolean json;

    @Override
    int run(OutrunClient client) throws IOException {
        if (name == null) {
            ArtifactList list = client.artifacts(id);
            if (json) {
                printJson(list);
                return 0;
            }
            if (list.artifacts().isEmpty()) {
                err().println("outrun: no artifacts (yet): they are collected when the command ends");
            }
            for (ArtifactList.Item a : list.artifacts()) {
                out().printf("%-10s %12d  %s%s%n", a.status(), a.size(), a.name(),
                        a.detail() == null ? "" : "  (" + a.detail() + ")");
            }
            return 0;
        }
        if ("-".equals(output)) {
            out().flush();
            long n = client.download(id, name, System.out);
            System.out.flush();
            return n >= 0 ? 0 : 1;
        }
        Path target = Path.of(output != null ? output : Path.of(name).getFileName().toString());
        Path partial = target.resolveSibling(target.getFileName() + ".part");
        try (OutputStream out = Files.newOutputStream(partial)) {
            long n = client.download(id, name, out);
            err().println("outrun: wrote " + n + " bytes to " + target);
        } catch (RuntimeException e) {
            Files.deleteIfExists(partial);
            throw e;
        }
        Files.move(partial, target, StandardCopyOption.REPLACE_EXISTING);
        return 0;
    }
}
