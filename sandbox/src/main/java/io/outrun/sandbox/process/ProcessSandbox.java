package io.outrun.sandbox.process;

import io.outrun.model.inputs.StdinMode;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunRefusedException;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxException;
import io.outrun.sandbox.SandboxUnavailableException;
import io.outrun.sandbox.files.HostWorkdir;
import io.outrun.sandbox.files.TarSource;
import io.outrun.sandbox.script.BashScript;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.Charset;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

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
     * The run's own bash, before its command and then the command itself ({@code wrapper.sh}
     * beside this class: its header says what it assumes and takes). Spawned:
     * {@code setsid bash <wrapper> SCRIPT LEASE PIDFILE}; a spare ({@link SpareShells}):
     * {@code setsid bash <wrapper>}, its run's go file named on its stdin ({@link #handToSpare}).
     * Run from a file, not {@code bash -c}, so that the command's errors exit as under
     * {@code bash script}.
     */
    static final BashScript WRAPPER = BashScript.of(ProcessSandbox.class, "wrapper.sh");

    /**
     * The script file of a run with a terminal ({@code tty.sh}): sourced by the wrapper, it runs
     * the command, the file beside it ({@link #ttyCommand}), under util-linux {@code script}.
     */
    static final BashScript TTY = BashScript.of(ProcessSandbox.class, "tty.sh");

    private final Path scratch;
    /** This node's pid files are {@code <execution>.<epoch>.<tag>.pid}: the watchdog watches only those. */
    private final String tag = Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 4);
    private final NodeWatchdog watchdog = new NodeWatchdog(RUNS, tag);
    private final LeftoverRuns leftovers = new LeftoverRuns(RUNS, tag);
    private final Path wrapper;
    /** Each run in bubblewrap ({@link #isolated}), or null: plain host processes. */
    private volatile Bubblewrap bubblewrap;

    /**
     * Runs every command in bubblewrap (see {@link Bubblewrap}), with {@code hidden} paths masked.
     * Spares are then whole sandboxes made ahead, for the runs in the worker's own directory with
     * the node's network (a spare cannot know another workdir in advance); other runs spawn theirs.
     *
     * @throws io.outrun.sandbox.SandboxUnavailableException when bubblewrap cannot run here
     */
    public ProcessSandbox isolated(List<Path> hidden) {
        String why = Bubblewrap.unusableBecause();
        if (why != null) {
            throw new SandboxUnavailableException(why);
        }
        this.bubblewrap = new Bubblewrap(hidden);
        return this;
    }

    /**
     * The command line that runs {@code command} in bubblewrap with the very isolation a run of
     * this sandbox gets (the worker's directory as its workdir, {@code network} as the node's),
     * without Outrun's own part ({@code setsid}, the wrapper, the relay): the baseline of the
     * dispatch benchmark ({@code bench/src/DispatchBench}).
     *
     * @throws IllegalStateException when runs are not isolated
     */
    public List<String> bareIsolatedArgv(List<String> command, String network) {
        Bubblewrap isolation = bubblewrap;
        if (isolation == null) {
            throw new IllegalStateException("runs of this sandbox are not in bubblewrap");
        }
        List<String> argv = new ArrayList<>(isolation.argv(List.of(), null, network));
        argv.addAll(command);
        return argv;
    }

    /** Whether runs go through bubblewrap. */
    public boolean isIsolated() {
        return bubblewrap != null;
    }

    /** Spare wrappers kept waiting ({@code --pool-size}); -1: as many as the node's slots. */
    private volatile int poolSize = -1;
    private SpareShells spares;
    /** The node's network setting, which an isolated spare was made with (see {@link #prepare}). */
    private volatile String spareNetwork;

    /**
     * Where the API relay of isolated runs finds their sockets (see {@link #withApiRelay}); null:
     * the sandbox runs no relay.
     */
    private volatile Path relayDir;

    /**
     * Isolated runs with an API socket ({@code Limits.apiSocket}, issue 31) get a relay in their
     * namespace, {@code 127.0.0.1:}{@value Limits#API_RELAY_PORT} to that socket, served by socat, which the wrapper starts
     * (wrapper.sh, {@code _outrun_relay}): a spare starts it before it waits for its run, so a run
     * handed to one finds it listening and pays nothing for it; a spawned run starts it before
     * its command. A spare's relay looks in a directory of its own under {@code dir}, the node's
     * bridge directory (the same file system as the runs' sockets), where its run's socket is
     * hard-linked when the run is handed over. Call before {@link #prepare} (spares made before
     * have no relay and serve no run with an API socket).
     */
    public ProcessSandbox withApiRelay(Path dir) {
        this.relayDir = dir.toAbsolutePath();
        return this;
    }

    /** The wrapper's {@code _outrun_relay}: the relay's port and socket (wrapper.sh). */
    private static final String RELAY_ENV = "_outrun_relay";

    public ProcessSandbox() {
        try {
            this.scratch = Files.createTempDirectory("outrun-process-");
            this.wrapper = scratch.resolve("outrun-run.sh");
            WRAPPER.writeTo(wrapper);
            Files.createDirectories(RUNS);
            leftovers.registerNode();
        } catch (IOException e) {
            throw new SandboxUnavailableException("cannot create a scratch directory for the process sandbox", e);
        }
    }

    /**
     * Kills process groups of runs that are no longer current, found through their pid files:
     * a SIGKILLed worker's commands live on (they have their own session) until this finds them.
     * Runs of another sandbox whose JVM still lives are left to it (see {@link LeftoverRuns}).
     */
    @Override
    public int removeLeftovers(LeftoverPolicy stillCurrent) {
        watchdog.revive();
        return leftovers.remove(stillCurrent);
    }

    /**
     * Sets how many spare run wrappers wait ({@code --pool-size}); 0 turns the warm pool off.
     * Takes effect at {@link #prepare}; by default the node's slots.
     */
    public ProcessSandbox withPoolSize(int size) {
        if (size < 0 || size > 64) {
            throw new IllegalArgumentException("the warm pool size must be between 0 and 64, got: " + size);
        }
        this.poolSize = size;
        return this;
    }

    /** The default pool is the node's slots, up to this many idle bash processes (about 4 MiB each). */
    static final int DEFAULT_MAX_SPARES = 16;

    /** Starts the spares: a run then skips its spawn and bash's start-up. */
    @Override
    public synchronized void prepare(NodeShape node) {
        spareNetwork = node.limits() == null ? null : node.limits().network();
        int size = poolSize < 0 ? Math.min(node.slots(), DEFAULT_MAX_SPARES) : poolSize;
        if (size > 0 && spares == null) {
            spares = new SpareShells(size, this::spawnSpare);
        }
    }

    /** Runs served by a spare since {@link #prepare}. */
    public synchronized long sparesServed() {
        return spares == null ? 0 : spares.servedCount();
    }

    /** The pids of the spares waiting now (tests). */
    synchronized List<Long> sparePids() {
        return spares == null ? List.of() : spares.waitingPids();
    }

    private synchronized void countServed() {
        spares.served();
    }

    private synchronized SpareShells.Spare spare() {
        return spares == null ? null : spares.take();
    }

    private SpareShells.Spare spawnSpare() throws IOException {
        Bubblewrap isolation = bubblewrap;
        if (isolation == null) {
            ProcessBuilder builder = new ProcessBuilder("/usr/bin/setsid", BashScript.BASH, wrapper.toString());
            baseEnvironment(builder.environment());
            return new SpareShells.Spare(builder.start());
        }
        // Its own directory (bound read-only: its run's script, go file and lease file arrive
        // there), and, with a relay, its own directory beside the bridge's sockets.
        Path dir = Files.createTempDirectory(scratch, "spare-");
        Path apiDir = null;
        Path relay = relayDir;
        try {
            List<Path> visible = new ArrayList<>(List.of(wrapper, dir));
            if (relay != null) {
                apiDir = relay.resolve(dir.getFileName().toString());
                Files.createDirectories(apiDir);
                visible.add(apiDir);
            }
            List<String> argv = new ArrayList<>(List.of("/usr/bin/setsid"));
            argv.addAll(isolation.argv(visible, null, spareNetwork));
            argv.addAll(List.of(BashScript.BASH, wrapper.toString()));
            ProcessBuilder builder = new ProcessBuilder(argv);
            baseEnvironment(builder.environment());
            if (apiDir != null) {
                builder.environment().put(RELAY_ENV, Limits.API_RELAY_PORT + ":" + apiDir.resolve(Limits.API_SOCKET_NAME));
            }
            return new SpareShells.Spare(builder.start(), dir, apiDir);
        } catch (IOException | RuntimeException e) {
            ProcessRun.deleteTree(dir);
            ProcessRun.deleteTree(apiDir);
            throw e;
        }
    }

    /** Every run's environment before its own variables: a minimal PATH, never the node's own. */
    private static void baseEnvironment(Map<String, String> env) {
        env.clear();
        env.put("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        env.put("HOME", System.getProperty("java.io.tmpdir"));
        // Tools print plainly unless the execution asked otherwise.
        env.put("NO_COLOR", "1");
        env.put("TERM", "dumb");
        env.put("PAGER", "cat");
    }

    /** util-linux {@code script}: the pseudo-terminal of a run with {@code "tty": true} (tty.sh runs it). */
    static final String SCRIPT_TOOL = "/usr/bin/script";

    /** A tty run's command, beside the shim that the wrapper runs (removed with it). */
    static Path ttyCommand(Path script) {
        return script.resolveSibling(script.getFileName() + ".cmd");
    }

    /** The charset the JDK passes a spawned process's arguments and environment in. */
    static final Charset NATIVE = nativeCharset();

    /**
     * A host process gets its environment in this JVM's native charset: under a C locale that is
     * ASCII, and a value with other characters would reach the command as '?'s (a secret then
     * garbled, and shown unmasked since the mask knows its real bytes). Refused with the reason.
     */
    static void refuseUnencodable(RunSpec spec) {
        CharsetEncoder encoder = NATIVE.newEncoder();
        for (Map.Entry<String, String> e : spec.runEnv().entrySet()) {
            if (!encoder.canEncode(e.getKey()) || !encoder.canEncode(e.getValue())) {
                String what = spec.secrets().containsKey(e.getKey()) ? "the secret " : "the environment variable ";
                throw new RunRefusedException(what + e.getKey() + " has characters this worker's"
                        + " locale (" + NATIVE + ") cannot give a host process; the operator starts the worker under a"
                        + " UTF-8 locale (LANG=C.UTF-8) or uses the Docker sandbox");
            }
        }
    }

    private static Charset nativeCharset() {
        try {
            return Charset.forName(System.getProperty("sun.jnu.encoding"));
        } catch (RuntimeException e) {
            return Charset.defaultCharset();
        }
    }

    /** Where the sandbox keeps its scripts and spares' directories (tests). */
    Path scratchDir() {
        return scratch;
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
        synchronized (this) {
            if (spares != null) {
                spares.close();
            }
        }
        watchdog.close();
        leftovers.unregisterNode();
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
        refuseUnencodable(spec);
        if (spec.stdin() == StdinMode.TTY && !Files.isExecutable(Path.of(SCRIPT_TOOL))) {
            throw new RunRefusedException("a terminal (\"tty\": true) needs " + SCRIPT_TOOL
                    + " (util-linux) on the node, which is missing");
        }
        if (spec.stdin() == StdinMode.TTY && bubblewrap == null) {
            // script gives the command a session of its own: outside a PID namespace a kill of the
            // run's process group would miss it, and whatever ignores SIGHUP would outlive the run.
            throw new RunRefusedException("a terminal (\"tty\": true) on host processes needs"
                    + " bubblewrap (apt-get install bubblewrap; --bubblewrap auto or on), or the Docker sandbox: without"
                    + " a PID namespace the terminal's session would escape the run's kill");
        }
        Path workdir = spec.workdir() == null || spec.workdir().isBlank() ? null : Path.of(spec.workdir());
        if (workdir != null && !Files.isDirectory(workdir)) {
            throw new RunRefusedException("workdir " + spec.workdir() + " is not a directory on this node"
                    + " (the host-process sandbox runs in an existing directory)");
        }
        Path own = null;
        try {
            if (spec.files().touchesWorkdir() && workdir == null) {
                // A fresh directory of its own, like a container's empty workdir, removed at close.
                own = Files.createTempDirectory(scratch, "work-");
                workdir = own;
            }
            for (TarSource input : spec.files().inputs()) {
                try (InputStream tar = input.open()) {
                    HostWorkdir.extract(tar, workdir);
                }
            }
            // The command goes through a file, never an argv: any size, no ARG_MAX.
            Path script = Files.createTempFile(scratch, "run-", ".sh");
            if (spec.stdin() == StdinMode.TTY) {
                // The wrapper runs a shim that gives the command a pseudo-terminal (tty.sh); the
                // command itself is the file beside it.
                Files.writeString(ttyCommand(script), spec.command(), StandardCharsets.UTF_8);
                TTY.writeTo(script);
            } else {
                Files.writeString(script, spec.command(), StandardCharsets.UTF_8);
            }
            Path pidFile = RUNS.resolve(spec.executionId() + "." + spec.epoch() + "." + tag + ".pid");
            String lease = spec.leaseFile() == null ? "" : spec.leaseFile().toString();
            // A placeholder before the spawn, so that a worker dying before the run wrote its pid
            // does not leave it unguarded: the watchdog stays for it until its lease is past.
            Files.writeString(pidFile, "0 0 " + lease + "\n");
            // Before the run: a run must never be without its kill switch.
            watchdog.ensureRunning();
            // A spare's stdin carries its go file's path: a run whose stdin stays open spawns its own.
            Bubblewrap isolation = bubblewrap;
            SpareHandOff.Handed handed = spec.stdin().open() ? null
                    : SpareHandOff.handOver(spec, script, lease, pidFile, workdir, isolation != null, spareNetwork, this::spare);
            if (handed != null) {
                countServed();
            }
            Process process = handed == null ? null : handed.process();
            if (process == null) {
                List<String> argv = new ArrayList<>(List.of("/usr/bin/setsid"));
                Path apiSocket = isolation != null && relayDir != null ? spec.limits().apiSocket() : null;
                if (isolation != null) {
                    List<Path> visible = new ArrayList<>(List.of(wrapper, script));
                    if (spec.stdin() == StdinMode.TTY) {
                        visible.add(ttyCommand(script));
                    }
                    if (spec.leaseFile() != null) {
                        visible.add(spec.leaseFile());
                    }
                    if (spec.limits().apiSocket() != null) {
                        visible.add(spec.limits().apiSocket()); // the run's bridge to the API (issue 31), at its host path
                    }
                    argv.addAll(isolation.argv(visible, workdir, spec.limits().network()));
                }
                // Isolated, the wrapper's own pid ($$ in the run's PID namespace) means nothing
                // outside: it writes a throwaway file, and the worker writes bwrap's below.
                argv.addAll(List.of(BashScript.BASH, wrapper.toString(), script.toString(), lease,
                        isolation != null ? Bubblewrap.INNER_PID_FILE : pidFile.toString()));
                ProcessBuilder builder = new ProcessBuilder(argv);
                baseEnvironment(builder.environment());
                builder.environment().putAll(spec.runEnv());
                // The wrapper's own: never the run's (ProcessSandbox.exportable keeps it from spares too).
                builder.environment().remove(RELAY_ENV);
                if (apiSocket != null) {
                    builder.environment().put(RELAY_ENV, Limits.API_RELAY_PORT + ":" + apiSocket.toAbsolutePath());
                }
                if (workdir != null) {
                    builder.directory(workdir.toFile());
                }
                builder.redirectInput(spec.stdin().open() ? ProcessBuilder.Redirect.PIPE
                        : ProcessBuilder.Redirect.from(new File("/dev/null")));
                try {
                    process = builder.start();
                } catch (IOException e) {
                    Files.deleteIfExists(pidFile);
                    throw e;
                }
                if (isolation != null) {
                    // The process the watchdog and the clean-up kill (its group): bwrap, whose PID
                    // namespace, and everything in it, dies with it.
                    RunGroups.writePidFile(pidFile, process.pid(), lease);
                }
            }
            return new ProcessRun(spec, process, script, pidFile, watchdog, workdir, own, handed == null ? null : handed.spare());
        } catch (IOException e) {
            ProcessRun.deleteTree(own);
            throw new SandboxException("cannot start a host process for execution " + spec.executionId(), e);
        }
    }
}
