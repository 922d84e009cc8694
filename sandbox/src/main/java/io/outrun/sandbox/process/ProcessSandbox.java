package io.outrun.sandbox.process;

import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxException;
import io.outrun.sandbox.SandboxUnavailableException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Runs commands as host processes, for local development only.
 *
 * <p><b>No isolation</b>: the command runs as the node's user with the node's filesystem and
 * network. It gets its own session and process group (via {@code setsid}) so that a kill
 * reaches every process it started, unless one of them starts a session of its own. The
 * environment is the spec's plus a minimal PATH, never the node's own.
 */
public final class ProcessSandbox implements Sandbox {

    /** Shared by every node of this machine: one pid file per live run, for leftover clean-up. */
    private static final Path RUNS = Path.of(System.getProperty("java.io.tmpdir"), "outrun-process-runs");

    /**
     * The run's own process ({@code setsid} made it the leader of a new session and process
     * group), before its command: $0 the script, $1 the lease file ('' without), $2 the pid file.
     * A lease already lapsed at this first look means the worker stalled between claim and start
     * and another node may be running the next attempt: the command never runs (137, as killed).
     * Otherwise the pid file is written before the command (so the node's watchdog and the
     * leftover clean-up find the run even if its worker dies this very moment), and the script
     * runs in this same bash ({@code .}), not in a second one: a process per run less. Its own
     * variables are named {@code _outrun_*} (and unset before the command), so that no command
     * loses a variable of its environment to them.
     */
    static final String WRAPPER = String.join("\n",
            "if [ -n \"$1\" ]; then",
            "  _outrun_d=; read -r _outrun_d < \"$1\" 2>/dev/null; printf -v _outrun_now '%(%s)T' -1",
            "  if [ -n \"$_outrun_d\" ] && [ \"$_outrun_now\" -gt \"$_outrun_d\" ] 2>/dev/null; then exit 137; fi",
            "fi",
            "if ! { printf '%s %s\\n' \"$$\" \"$1\" > \"$2\"; } 2>/dev/null; then",
            "  printf 'outrun: cannot write the pid file %s; the run does not start unguarded\\n' \"$2\" >&2; exit 126",
            "fi",
            "unset _outrun_d _outrun_now; set --; . \"$0\"");

    private final Path scratch;
    /** This node's pid files are {@code <execution>.<epoch>.<tag>.pid}: the watchdog watches only those. */
    private final String tag = Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong() >>> 4);
    private final NodeWatchdog watchdog = new NodeWatchdog(RUNS, tag);

    public ProcessSandbox() {
        try {
            this.scratch = Files.createTempDirectory("outrun-process-");
            Files.createDirectories(RUNS);
        } catch (IOException e) {
            throw new SandboxUnavailableException("cannot create a scratch directory for the process sandbox", e);
        }
    }

    /**
     * Kills process groups of runs that are no longer current, found through their pid files:
     * a SIGKILLed worker's commands live on (they have their own session) until this finds them.
     */
    @Override
    public int removeLeftovers(LeftoverPolicy stillCurrent) {
        watchdog.revive();
        int removed = 0;
        try (var files = Files.list(RUNS)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                // <execution>.<epoch>.<node tag>.pid (<execution>.<epoch>.pid from before the tag)
                String[] parts = file.getFileName().toString().split("\\.");
                if ((parts.length != 3 && parts.length != 4) || !parts[parts.length - 1].equals("pid")) {
                    continue;
                }
                java.util.UUID id;
                long epoch;
                long pid;
                try {
                    id = java.util.UUID.fromString(parts[0]);
                    epoch = Long.parseLong(parts[1]);
                    String text = Files.readString(file).trim();
                    int space = text.indexOf(' ');
                    pid = Long.parseLong(space < 0 ? text : text.substring(0, space));
                } catch (IllegalArgumentException | IOException e) {
                    continue;
                }
                if (!ProcessRun.isOurs(pid)) {
                    // Its process is gone (ended, or killed by its own kill switch): only the file is
                    // left, and deciding about it costs the database nothing.
                    Files.deleteIfExists(file);
                    continue;
                }
                if (stillCurrent.isCurrent(id, epoch)) {
                    continue;
                }
                ProcessRun.killGroup(pid);
                removed++;
                Files.deleteIfExists(file);
            }
        } catch (IOException e) {
            throw new SandboxException("cannot list leftover runs in " + RUNS, e);
        }
        return removed;
    }

    /** The node watchdog's pid, -1 while none runs (tests). */
    long watchdogPid() {
        return watchdog.pid();
    }

    @Override
    public String name() {
        return "process";
    }

    /** Runs still open are the caller's to close; what ended runs left behind is killed now. */
    @Override
    public void close() {
        watchdog.close();
    }

    @Override
    public void verify() {
        for (String tool : new String[] {"/bin/bash", "/usr/bin/setsid"}) {
            if (!Files.isExecutable(Path.of(tool))) {
                throw new SandboxUnavailableException("the process sandbox needs " + tool + ", which is missing on this node");
            }
        }
    }

    @Override
    public Run start(RunSpec spec) {
        Path workdir = spec.workdir() == null || spec.workdir().isBlank() ? null : Path.of(spec.workdir());
        if (workdir != null && !Files.isDirectory(workdir)) {
            throw new io.outrun.sandbox.RunRefusedException("workdir " + spec.workdir() + " is not a directory on this node"
                    + " (the host-process sandbox runs in an existing directory)");
        }
        Path own = null;
        try {
            if (spec.files().touchesWorkdir() && workdir == null) {
                // A fresh directory of its own, like a container's empty workdir, removed at close.
                own = Files.createTempDirectory(scratch, "work-");
                workdir = own;
            }
            for (io.outrun.sandbox.files.TarSource input : spec.files().inputs()) {
                try (java.io.InputStream tar = input.open()) {
                    io.outrun.sandbox.files.HostWorkdir.extract(tar, workdir);
                }
            }
            // The command goes through a file, never an argv: any size, no ARG_MAX.
            Path script = Files.createTempFile(scratch, "run-", ".sh");
            Files.writeString(script, spec.command(), StandardCharsets.UTF_8);
            Path pidFile = RUNS.resolve(spec.executionId() + "." + spec.epoch() + "." + tag + ".pid");
            // Before the run: a run must never be without its kill switch.
            watchdog.ensureRunning();
            ProcessBuilder builder = new ProcessBuilder("/usr/bin/setsid", "/bin/bash", "-c", WRAPPER,
                    script.toString(), spec.leaseFile() == null ? "" : spec.leaseFile().toString(), pidFile.toString());
            Map<String, String> env = builder.environment();
            env.clear();
            env.put("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
            env.put("HOME", System.getProperty("java.io.tmpdir"));
            // Tools print plainly unless the execution asked otherwise.
            env.put("NO_COLOR", "1");
            env.put("TERM", "dumb");
            env.put("PAGER", "cat");
            env.putAll(spec.env());
            if (workdir != null) {
                builder.directory(workdir.toFile());
            }
            builder.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            Process process = builder.start();
            return new ProcessRun(spec, process, script, pidFile, watchdog, workdir, own);
        } catch (IOException e) {
            ProcessRun.deleteTree(own);
            throw new SandboxException("cannot start a host process for execution " + spec.executionId(), e);
        }
    }
}
