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
     * Runs the script ($1) in the run's own process group, beside the kill switch: once the
     * moment written in the lease file ($2) passes, the worker has stopped confirming the lease
     * (dead, paused, cut off from the database), so the watchdog kills the whole group, itself
     * included. It lives in the group, so the group's end (the reaper, a kill) ends it too.
     */
    static final String WRAPPER = String.join("\n",
            // stdin is a pipe the worker never writes to: read -t on it is the watchdog's one-second
            // sleep without spawning `sleep` (a fork and exec per run, a fifth of a short run's
            // process work). The pipe closes when the run's leader ($$) exits or the worker ($j, the
            // wrapper's parent: setsid execs in place) dies. Leader gone and worker alive: the
            // worker's reaper ends the rest of the group within a quarter second, so the watchdog
            // leaves (it used to spawn a `sleep` per run here). Worker gone: it stays on guard,
            // sleeping with `sleep 1`, until the lease's deadline. The command's stdin stays /dev/null.
            "exec 9<&0 </dev/null",
            "if [ -n \"$2\" ]; then",
            "  d=; read -r d < \"$2\"; printf -v now '%(%s)T' -1;",
            "  if [ -n \"$d\" ] && [ \"$now\" -gt \"$d\" ] 2>/dev/null; then exit 137; fi",
            "  j=$PPID",
            "  ( exec </dev/null >/dev/null 2>&1",
            "    while :; do read -r -t 1 -u 9 _; if [ $? -le 128 ]; then kill -0 $$ || ! kill -0 $j || exit 0; sleep 1; fi;",
            "      d=; read -r d < \"$2\"; printf -v now '%(%s)T' -1;",
            "      if [ -n \"$d\" ] && [ \"$now\" -gt \"$d\" ] 2>/dev/null; then kill -KILL 0; fi; done ) &",
            "fi",
            "exec bash \"$1\" 9<&-");

    private final Path scratch;
    private final GroupReaper reaper = new GroupReaper();

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
        int removed = 0;
        try (var files = Files.list(RUNS)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                String[] parts = file.getFileName().toString().split("\\.");
                if (parts.length != 3 || !parts[2].equals("pid")) {
                    continue;
                }
                java.util.UUID id;
                long epoch;
                long pid;
                try {
                    id = java.util.UUID.fromString(parts[0]);
                    epoch = Long.parseLong(parts[1]);
                    pid = Long.parseLong(Files.readString(file).trim());
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

    @Override
    public String name() {
        return "process";
    }

    /** Runs still open are the caller's to close; what ended runs left behind is killed now. */
    @Override
    public void close() {
        reaper.close();
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
            ProcessBuilder builder = new ProcessBuilder("/usr/bin/setsid", "/bin/bash", "-c", WRAPPER,
                    "outrun-process-run", script.toString(), spec.leaseFile() == null ? "" : spec.leaseFile().toString());
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
            // A pipe held open and never written (see WRAPPER); the JDK closes it when the leader exits.
            builder.redirectInput(ProcessBuilder.Redirect.PIPE);
            Process process = builder.start();
            Path pidFile = RUNS.resolve(spec.executionId() + "." + spec.epoch() + ".pid");
            try {
                Files.writeString(pidFile, Long.toString(process.pid()));
            } catch (IOException e) {
                // Without its pid file nothing could find this run after a crash: it must not run.
                ProcessRun.killGroup(process.pid());
                process.destroyForcibly();
                throw e;
            }
            return new ProcessRun(spec, process, script, pidFile, reaper, workdir, own);
        } catch (IOException e) {
            ProcessRun.deleteTree(own);
            throw new SandboxException("cannot start a host process for execution " + spec.executionId(), e);
        }
    }
}
