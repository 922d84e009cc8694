package io.outrun.sandbox.script;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A bash script Outrun runs, kept as a {@code .sh} resource beside the class that runs it and read
 * once. Its text is never edited from Java: what the caller decides reaches the script only as
 * positional arguments (and, for a spare run wrapper, through its stdin), as the header of each
 * file says. Every resource is checked by {@code bash -n} in the build and run under the host's
 * bash by its own unit test.
 */
public final class BashScript {

    /** The bash every script runs under (each needs bash 5: see its header). */
    public static final String BASH = "/bin/bash";

    private final String resource;
    private final String text;

    private BashScript(String resource, String text) {
        this.resource = resource;
        this.text = text;
    }

    /**
     * The script {@code name} in the package of {@code beside} (as
     * {@code io/outrun/sandbox/process/wrapper.sh}); a missing resource is a broken build, so it
     * throws at once.
     */
    public static BashScript of(Class<?> beside, String name) {
        String resource = beside.getPackageName().replace('.', '/') + "/" + name;
        try (InputStream in = beside.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("the script " + resource + " is missing from the class path");
            }
            return new BashScript(resource, new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the script " + resource, e);
        }
    }

    /** Its class-path name, as {@code io/outrun/sandbox/docker/bootstrap.sh}. */
    public String resource() {
        return resource;
    }

    /** The script's text, as in its file. */
    public String text() {
        return text;
    }

    /**
     * The argv that runs the script's text with {@code bash -c}: {@code name} is its {@code $0}
     * (what {@code ps} shows), {@code args} its {@code $1}, {@code $2}... Used where no file of
     * ours can be (a container's entrypoint) or where none is needed.
     */
    public List<String> inline(String name, String... args) {
        List<String> argv = new ArrayList<>(4 + args.length);
        argv.add(BASH);
        argv.add("-c");
        argv.add(text);
        argv.add(name);
        argv.addAll(List.of(args));
        return argv;
    }

    /**
     * The script's one line of code (its other lines are comments or blank), for a script put in
     * front of a command on that command's own first line; a script with more lines of code is a
     * broken build, so it throws.
     */
    public String oneLine() {
        List<String> code = text.lines().filter(l -> !l.isBlank() && !l.stripLeading().startsWith("#")).toList();
        if (code.size() != 1) {
            throw new IllegalStateException("the script " + resource + " must have one line of code, has " + code.size());
        }
        return code.get(0);
    }

    /** Writes the script to {@code file}, for a bash that must run it by path ({@code bash file args}). */
    public Path writeTo(Path file) throws IOException {
        return Files.writeString(file, text, StandardCharsets.UTF_8);
    }
}
