package io.outrun.sandbox.process;

import io.outrun.sandbox.Limits;
import io.outrun.sandbox.RunSpec;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * How a run reaches a waiting spare ({@link SpareShells}): its go file (the script, lease file,
 * pid file, workdir and environment, NUL-ended fields) and the go file's path on the spare's
 * stdin, which {@link ProcessSandbox#WRAPPER} reads; for a spare in bubblewrap, the run's files
 * in the spare's own directory first.
 */
final class SpareHandOff {

    private SpareHandOff() {
    }

    /**
     * Hands the run to a waiting spare, taken from {@code take} (see {@link ProcessSandbox#WRAPPER});
     * null: none could take it (none waiting, it died, or the run's environment names a variable
     * bash itself reads at start-up or owns, which only a fresh bash gets right), and the caller
     * spawns one. An isolated spare
     * gets the run's files in its own directory (the script hard-linked, the lease file's
     * deadline copied, the API socket hard-linked where its relay looks), and this writes the
     * run's pid file (bwrap's pid) before the run is handed over: it is never unguarded.
     */
    static Handed handOver(RunSpec spec, Path script, String lease, Path pidFile, Path workdir, boolean isolated,
                           String spareNetwork, Supplier<SpareShells.Spare> take) {
        Map<String, String> env = spec.runEnv();
        for (String name : env.keySet()) {
            if (!exportable(name)) {
                return null;
            }
        }
        if (isolated && (workdir != null || !Objects.equals(spec.limits().network(), spareNetwork))) {
            return null; // made for the worker's directory and the node's network
        }
        if (goFile(script).toString().getBytes(ProcessSandbox.NATIVE).length > 9999) {
            return null; // longer than four digits say (a path is at most 4096 bytes on Linux)
        }
        SpareShells.Spare spare = take.get();
        if (spare == null) {
            return null;
        }
        Path apiSocket = spec.limits().apiSocket();
        if (isolated && apiSocket != null && spare.apiDir() == null) {
            SpareShells.dismiss(spare); // made before the relay was set up (never once the node runs)
            return null;
        }
        Path runScript = script;
        String runLease = lease;
        String runPidFile = pidFile.toString();
        Path goFile = goFile(script);
        try {
            if (isolated) {
                runScript = Files.createLink(spare.dir().resolve("run.sh"), script);
                goFile = spare.dir().resolve("go");
                if (!lease.isEmpty()) {
                    // Only the wrapper's first look reads it inside (the watchdog reads the real one).
                    runLease = Files.copy(Path.of(lease), spare.dir().resolve("lease")).toString();
                }
                runPidFile = Bubblewrap.INNER_PID_FILE;
                if (apiSocket != null) {
                    Files.createLink(spare.apiDir().resolve(Limits.API_SOCKET_NAME), apiSocket);
                }
            }
            StringBuilder go = new StringBuilder();
            for (String field : new String[] {runScript.toString(), runLease, runPidFile, workdir == null ? "" : workdir.toString()}) {
                go.append(field).append('\0');
            }
            env.forEach((k, v) -> go.append(k).append('\0').append(v).append('\0'));
            go.append('\0');
            // In the charset a spawn would pass its environment and arguments in.
            byte[] message = go.toString().getBytes(ProcessSandbox.NATIVE);
            if (message.length > MAX_GO_BYTES) {
                // A spawn of that size may fail (E2BIG) where a spare would not: the same for every run.
                SpareShells.dismiss(spare);
                return null;
            }
            Files.write(goFile, message);
            if (isolated) {
                RunGroups.writePidFile(pidFile, spare.process().pid(), lease);
            }
        } catch (IOException e) {
            // Its directory went (a clean-up of another node sharing the lease dir), or a write failed.
            SpareShells.dismiss(spare);
            return null;
        }
        byte[] path = goFile.toString().getBytes(ProcessSandbox.NATIVE);
        // Its length in four digits, then the path (see WRAPPER), in one write.
        byte[] word = new byte[4 + path.length];
        System.arraycopy(String.format(Locale.ROOT, "%04d", path.length).getBytes(StandardCharsets.US_ASCII), 0, word, 0, 4);
        System.arraycopy(path, 0, word, 4, path.length);
        try (OutputStream in = spare.process().getOutputStream()) {
            in.write(word);
        } catch (IOException e) {
            // It died before its run reached it (killed from outside): this run spawns its own.
            spare.process().destroyForcibly();
            spare.removeDirs();
            return null;
        }
        return new Handed(spare.process(), spare);
    }

    /** A run's process, and the spare it came from (null: spawned). */
    record Handed(Process process, SpareShells.Spare spare) {
    }

    /** A run's go file for a spare, beside its script (removed with it). */
    static Path goFile(Path script) {
        return script.resolveSibling(script.getFileName() + ".go");
    }

    /** What a go file may hold; a run with a larger environment spawns. */
    private static final int MAX_GO_BYTES = 64 * 1024;

    /**
     * A name a spare may export as a fresh bash would have imported it: an identifier that is not
     * one of bash's own variables (read-only, dynamic, or read only at start-up, such as
     * {@code BASH_ENV} or {@code SHELLOPTS}).
     */
    static boolean exportable(String name) {
        return IDENTIFIER.matcher(name).matches() && !name.startsWith("BASH") && !name.startsWith("COMP_")
                // The wrapper's own variables: a run must never set its lease file or pid file.
                && !name.startsWith("_outrun_")
                // Locale: a bad value warns when assigned, silently at a bash's start.
                && !name.startsWith("LC_") && !name.equals("LANG") && !name.equals("LANGUAGE")
                && !name.equals("_") && !BASH_OWN.contains(name);
    }

    private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    private static final Set<String> BASH_OWN = Set.of("ENV", "SHELLOPTS", "POSIXLY_CORRECT",
            "SHLVL", "PWD", "OLDPWD", "IFS", "UID", "EUID", "PPID", "GROUPS", "FUNCNAME", "RANDOM", "SRANDOM", "SECONDS",
            "LINENO", "EPOCHSECONDS", "EPOCHREALTIME", "HISTCMD", "DIRSTACK", "PIPESTATUS", "HOSTNAME", "HOSTTYPE",
            "OSTYPE", "MACHTYPE", "OPTIND", "OPTARG", "OPTERR", "PS1", "PS2", "PS4", "TMOUT", "HISTFILE", "GLOBIGNORE",
            "EXECIGNORE", "IGNOREEOF");
}
