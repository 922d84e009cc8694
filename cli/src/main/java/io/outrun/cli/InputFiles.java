package io.outrun.cli;

import io.outrun.client.wire.InputFileSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;

/** {@code --file LOCAL[:PATH]}: local files read for a submission's {@code files}. */
final class InputFiles {

    private InputFiles() {
    }

    static List<InputFileSpec> read(List<String> args) {
        if (args == null || args.isEmpty()) {
            return null;
        }
        List<InputFileSpec> files = new ArrayList<>();
        for (String arg : args) {
            int colon = arg.lastIndexOf(':');
            Path local = Path.of(colon > 0 ? arg.substring(0, colon) : arg);
            String remote = colon > 0 ? arg.substring(colon + 1) : local.getFileName().toString();
            if (!Files.isRegularFile(local)) {
                throw new UsageException("--file " + arg + ": " + local + " is not a readable file");
            }
            try {
                files.add(InputFileSpec.of(remote, Files.readAllBytes(local), mode(local)));
            } catch (IOException e) {
                throw new UsageException("--file " + arg + " cannot be read: " + e.getMessage());
            }
        }
        return files;
    }

    private static String mode(Path local) {
        try {
            var perms = Files.getPosixFilePermissions(local);
            return perms.contains(PosixFilePermission.OWNER_EXECUTE) ? "0755" : "0644";
        } catch (IOException | UnsupportedOperationException e) {
            return null;
        }
    }
}
