package io.outrun.sandbox.process;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The light sandbox of host processes (issue 25 #10), as Codex runs commands on Linux: each run in
 * bubblewrap with its own PID namespace, so every process it starts, whatever it forked or
 * however it detached ({@code setsid}, {@code nohup}, a double fork), dies with it; the host's
 * files read-only, the run's workdir its only writable place, {@code /tmp} a fresh tmpfs; no
 * network unless the limits name one; and the paths it must not see at all (the dev's data dir,
 * its token and database password) masked by empty tmpfs mounts. {@code --die-with-parent}: the
 * namespace dies with the bwrap process the worker started, so a kill of that one process (its
 * group, as before) ends the whole run.
 */
final class Bubblewrap {

    static final String TOOL = "/usr/bin/bwrap";
    /** Where the wrapper writes its own pid file inside the sandbox (the worker writes the real one). */
    static final String INNER_PID_FILE = "/tmp/.outrun-run.pid";

    private final List<Path> hidden;

    Bubblewrap(List<Path> hidden) {
        this.hidden = List.copyOf(hidden);
    }

    /** Whether bubblewrap is installed and can make a PID namespace here (it cannot in some containers). */
    static String unusableBecause() {
        if (!Files.isExecutable(Path.of(TOOL))) {
            return TOOL + " is not installed (Debian: apt-get install bubblewrap)";
        }
        try {
            Process p = new ProcessBuilder(TOOL, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                    "--unshare-pid", "--unshare-net", "--die-with-parent", "/bin/true")
                    .redirectErrorStream(true).start();
            boolean ended = p.waitFor(10, TimeUnit.SECONDS);
            String out = new String(p.getInputStream().readNBytes(400)).strip();
            if (!ended) {
                p.destroyForcibly();
                return TOOL + " did not answer within 10 s";
            }
            return p.exitValue() == 0 ? null : TOOL + " cannot make a sandbox here: " + out;
        } catch (IOException e) {
            return TOOL + " cannot be run: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while trying " + TOOL;
        }
    }

    /**
     * The bwrap command line before the wrapper's own: {@code visible} files (the wrapper, the
     * run's script, its lease file) are bound read-only at their own paths, {@code workdir}
     * read-write (null: none of its own, the worker's directory is bound instead).
     */
    List<String> argv(List<Path> visible, Path workdir, String network) {
        List<String> argv = new ArrayList<>(List.of(TOOL, "--die-with-parent", "--unshare-pid", "--unshare-ipc",
                "--unshare-uts", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--tmpfs", "/tmp"));
        if (network == null) {
            argv.add("--unshare-net");
        }
        for (Path file : visible) {
            String p = file.toAbsolutePath().toString();
            argv.addAll(List.of("--ro-bind", p, p));
        }
        Path dir = (workdir != null ? workdir : Path.of("")).toAbsolutePath().normalize();
        argv.addAll(List.of("--bind", dir.toString(), dir.toString(), "--chdir", dir.toString()));
        // Last, so that a hidden path inside the workdir (the dev's .outrun in its project) stays hidden.
        for (Path path : hidden) {
            Path p = path.toAbsolutePath().normalize();
            if (Files.isDirectory(p)) {
                argv.addAll(List.of("--tmpfs", p.toString()));
            } else if (Files.exists(p)) {
                argv.addAll(List.of("--ro-bind", "/dev/null", p.toString()));
            }
        }
        // The run's own files inside a hidden directory (dev keeps its lease files in its data
        // dir) are bound again on top: hidden, the kill switch's first look found no lease file.
        for (Path file : visible) {
            Path p = file.toAbsolutePath().normalize();
            if (hidden.stream().anyMatch(h -> p.startsWith(h.toAbsolutePath().normalize()))) {
                argv.addAll(List.of("--ro-bind", p.toString(), p.toString()));
            }
        }
        argv.add("--");
        return argv;
    }
}
