package io.outrun.sandbox.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.CreateContainerCmd;
import com.github.dockerjava.api.model.AccessMode;
import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.LogConfig;
import com.github.dockerjava.api.model.Ulimit;
import com.github.dockerjava.api.model.Volume;
import io.outrun.model.inputs.Workdir;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.RunRefusedException;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.script.BashScript;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The locked-down container of one run: hardening, limits, labels, environment, and how the
 * command reaches bash.
 *
 * <p>The command never passes through an argv or the environment (both capped by the kernel at
 * 128 KiB per string). It is written to the container's stdin as a decimal byte count, a newline
 * and the bytes; {@link #BOOTSTRAP} ({@code bootstrap.sh} beside this class) reads exactly that
 * many bytes into the /tmp tmpfs, checks the size, and execs bash on the file with stdin from
 * /dev/null. Counting matters because docker-java never half-closes a hijacked stdin, so the
 * container would wait for an EOF that never comes; checking matters because a truncated script
 * could do something other than what was asked ({@code rm -rf /work/build} cut to
 * {@code rm -rf /work}).
 */
final class ContainerRecipe {

    /** Label on every Outrun container, for listing them all. */
    static final String LABEL_OUTRUN = "outrun";
    static final String LABEL_EXECUTION = "outrun.execution";
    static final String LABEL_ATTEMPT = "outrun.attempt";
    static final String LABEL_EPOCH = "outrun.epoch";
    static final String LABEL_NODE = "outrun.node";
    static final String LABEL_INCARNATION = "outrun.incarnation";
    /** The deployment (one per database) whose node made the container: see {@link Owner}. */
    static final String LABEL_DEPLOYMENT = "outrun.deployment";

    /**
     * Who makes a container: the node, and the deployment it belongs to (null: unknown), so that
     * deployments sharing an engine tell their containers apart.
     */
    record Owner(String nodeId, String deployment) {
        void label(Map<String, String> labels) {
            labels.put(LABEL_NODE, nodeId);
            if (deployment != null) {
                labels.put(LABEL_DEPLOYMENT, deployment);
            }
        }
    }
    /** Where the run's lease file is mounted, read-only, inside the container. */
    static final String LEASE_MOUNT = "/run/outrun-lease";

    /** The unprivileged user of sandbox/image/build.sh: the one every command runs as (bootstrap.sh's setpriv). */
    static final String USER = "10001:10001";
    /**
     * The container's own user: root, with only the capabilities it needs to drop to {@link #USER}
     * for the command and to kill it from its watchdog. The kill switch then runs as another user
     * than the command, which can neither signal nor ptrace it (issue 25 #4).
     */
    static final String BOOTSTRAP_USER = "0:0";
    static final String DEFAULT_WORKDIR = "/work";
    static final String PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    /** Label of a pooled container: started ahead of need, its run not known yet (value: "1"). */
    static final String LABEL_POOL = "outrun.pool";
    /** How long a pooled container waits for a run before it exits (its node may be gone). */
    static final long POOL_IDLE_S = 3600;
    /** Exit code of the bootstrap when the command did not arrive whole (or the image lacks a tool it needs). */
    static final int BOOTSTRAP_FAILED = 125;

    /**
     * The container's main process: reads the run from stdin, drops to {@link #USER} for the
     * command, and stays root as its kill switch. Its arguments and stdin are described in its
     * header; {@link #bootstrap} passes them.
     */
    static final BashScript BOOTSTRAP = BashScript.of(ContainerRecipe.class, "bootstrap.sh");

    /**
     * The entrypoint: bootstrap.sh with $1 the backstop in seconds ('' for a pooled container,
     * whose backstop comes in the header), $2 the lease file inside the container ('' without),
     * $3 for a pooled container how long it waits for its run ('' for a fresh one), and $4 the
     * API relay's port when the container serves {@link #API_SOCKET} there ('' for none).
     */
    static String[] bootstrap(String backstop, boolean leaseFile, Long idleSeconds, boolean apiRelay) {
        String lease = leaseFile ? LEASE_MOUNT : "";
        List<String> argv = BOOTSTRAP.inline("outrun-bootstrap", backstop, lease, idleSeconds == null ? "" : Long.toString(idleSeconds),
                apiRelay ? Integer.toString(Limits.API_RELAY_PORT) : "");
        return argv.toArray(String[]::new);
    }

    /** How long past its timeout a run orphaned by its worker may live before the backstop kills it. */
    static final long BACKSTOP_GRACE_S = 30;

    private ContainerRecipe() {
    }

    /** The create call for {@code spec}, not yet executed. */
    static CreateContainerCmd create(DockerClient client, RunSpec spec, String image, Owner owner,
                                     Collection<String> imageVolumes) {
        String workdir = workdir(spec);
        long backstop = (spec.timeout().toMillis() + 999) / 1000 + BACKSTOP_GRACE_S;
        return client.createContainerCmd(image)
                .withName(name(spec))
                // Entrypoint and no Cmd: the image's own CMD is not appended as arguments. The
                // backstop (seconds) is the bootstrap's $1.
                .withEntrypoint(bootstrap(Long.toString(backstop), spec.leaseFile() != null, null, spec.limits().apiSocket() != null))
                .withUser(BOOTSTRAP_USER)
                .withWorkingDir(workdir)
                // The container's own environment (the root bootstrap's) is the defaults alone; the
                // run's variables reach only the command (see runBytes). Checked here all the same.
                .withEnv(defaultsAfterChecking(spec.env(), workdir))
                .withLabels(labels(spec, owner))
                .withAttachStdin(true)
                .withStdinOpen(true)
                .withStdInOnce(true)
                .withAttachStdout(true)
                .withAttachStderr(true)
                .withTty(false)
                .withHostConfig(withLeaseFile(hostConfig(spec.limits(), workdir, imageVolumes), spec.leaseFile(),
                        spec.limits().egressSocket(), spec.limits().apiSocket() == null ? null
                                : spec.limits().apiSocket().toAbsolutePath().getParent()));
    }

    /**
     * The create call for a pooled container: the same hardening, limits and mounts as
     * {@link #create} gives a run with {@code limits} in the default workdir, started before its
     * run is known, so without the run's labels, environment and backstop: those arrive with
     * the command ({@link #pooledStdin}). Its lease file is the pool's own file for it, which the
     * run's lease file becomes (a hard link) when a run takes the container. Likewise its API
     * directory ({@code apiDir}, null: none) is the pool's own, empty until a run that has an API
     * socket takes the container and its socket is linked in. {@code apiRelay}: its relay listens
     * before it waits for its run (the node has an API bridge), so a run pays nothing for it.
     */
    static CreateContainerCmd createPooled(DockerClient client, String image, Owner owner, String incarnation,
                                           Limits limits, Path leaseFile, Path apiDir, boolean apiRelay,
                                           Collection<String> imageVolumes) {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put(LABEL_OUTRUN, "1");
        owner.label(labels);
        labels.put(LABEL_INCARNATION, incarnation);
        labels.put(LABEL_POOL, "1");
        return client.createContainerCmd(image)
                .withEntrypoint(bootstrap("", leaseFile != null, POOL_IDLE_S, apiRelay && apiDir != null))
                .withUser(BOOTSTRAP_USER)
                .withWorkingDir(DEFAULT_WORKDIR)
                .withEnv(env(Map.of(), DEFAULT_WORKDIR))
                .withLabels(labels)
                .withAttachStdin(true)
                .withStdinOpen(true)
                .withStdInOnce(true)
                .withAttachStdout(true)
                .withAttachStderr(true)
                .withTty(false)
                .withHostConfig(withLeaseFile(hostConfig(limits, DEFAULT_WORKDIR, imageVolumes), leaseFile, null, apiDir));
    }

    /**
     * A run's container name: {@code outrun-<execution>-e<epoch>}, unique since every claim takes
     * a new epoch. Pooled containers get it by a rename once taken ({@link WarmPool#nameSoon}).
     */
    static String name(RunSpec spec) {
        return "outrun-" + spec.executionId() + "-e" + spec.epoch();
    }

    /** Names bash keeps for itself (read-only or special): a run that sets one gets a fresh container. */
    private static final Set<String> SHELL_OWNED = Set.of("SHELLOPTS", "BASHOPTS", "EUID", "UID",
            "PPID", "IFS", "GROUPS", "FUNCNAME", "HOSTNAME", "PS4");
    private static final Pattern SHELL_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    /**
     * True when {@code env} can travel as {@code export} lines in a pooled run's script with the
     * very effect a fresh container's environment has: names bash accepts as variables and does
     * not own.
     */
    static boolean poolableEnv(Map<String, String> env) {
        for (Map.Entry<String, String> e : env.entrySet()) {
            String name = e.getKey();
            if (!SHELL_NAME.matcher(name).matches() || name.startsWith("BASH") || SHELL_OWNED.contains(name)
                    || e.getValue().indexOf('\0') >= 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * What a pooled container's stdin gets: a header (the command's byte count, the backstop in
     * seconds, the environment's byte count), the run's environment as {@code export} lines with
     * every value single-quoted, then the command's bytes.
     */
    /**
     * A NUL byte cannot pass {@link #BOOTSTRAP}'s builtin reads (bash variables end at NUL), and
     * bash would not run such a command as sent: refused up front with the reason, never cut.
     */
    static void refuseNul(RunSpec spec) {
        if (spec.command().indexOf('\0') >= 0) {
            throw new RunRefusedException("the command contains a NUL byte, which a bash script cannot hold");
        }
        spec.runEnv().forEach((name, value) -> {
            // The environment travels as export lines that the command's first bash sources: a
            // name must be one bash takes as a variable, and not one of bash's own (read-only ones
            // would stop it, BASH* would change it).
            if (name.indexOf('\0') < 0 && !poolableEnv(Map.of(name, ""))) {
                throw new RunRefusedException("the environment variable " + name + " cannot be set for a"
                        + " run in a container: " + (SHELL_NAME.matcher(name).matches()
                        ? "bash owns it" : "it is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)"));
            }
            if (name.indexOf('\0') >= 0 || value.indexOf('\0') >= 0) {
                throw new RunRefusedException("the environment variable " + name.replace('\0', '?')
                        + " contains a NUL byte, which an environment cannot hold");
            }
        });
    }

    static GatedStdin pooledStdin(RunSpec spec) {
        long backstop = (spec.timeout().toMillis() + 999) / 1000 + BACKSTOP_GRACE_S;
        return new GatedStdin(runBytes(spec, backstop));
    }

    /**
     * The header ({@code n b e i}: the command's byte count, the backstop in seconds or 0 when it
     * came as an argument, the environment's byte count, the stdin mode), then the run's
     * environment as {@code export} lines with every value single-quoted (sourced by the dropped
     * command only, never by the root bootstrap), then the command's bytes.
     */
    private static byte[] runBytes(RunSpec spec, long backstop) {
        StringBuilder exports = new StringBuilder();
        spec.runEnv().forEach((name, value) -> exports.append("export ").append(name).append("='")
                .append(value.replace("'", "'\\''")).append("'\n"));
        byte[] envBytes = exports.toString().getBytes(StandardCharsets.UTF_8);
        byte[] script = spec.command().getBytes(StandardCharsets.UTF_8);
        byte[] header = (script.length + " " + backstop + " " + envBytes.length + " " + stdinField(spec) + "\n")
                .getBytes(StandardCharsets.US_ASCII);
        ByteArrayOutputStream all = new ByteArrayOutputStream(header.length + envBytes.length + script.length);
        all.writeBytes(header);
        all.writeBytes(envBytes);
        all.writeBytes(script);
        return all.toByteArray();
    }

    static HostConfig hostConfig(Limits limits, String workdir, Collection<String> imageVolumes) {
        // exec: builds run what they compile in the workdir and /tmp; nosuid keeps setuid bits inert.
        String tmpfs = "rw,exec,nosuid,nodev,size=" + limits.tmpfsBytes() + ",uid=10001,gid=10001,mode=1777";
        Map<String, String> tmpfsMounts = new LinkedHashMap<>();
        // An image's VOLUMEs would become anonymous volumes on the host's disk, past the read-only
        // root and every size limit: each gets a bounded tmpfs instead.
        for (String volume : imageVolumes) {
            tmpfsMounts.put(volume, tmpfs);
        }
        tmpfsMounts.put(workdir, tmpfs);
        // Root's, sticky and open to all: the bootstrap's files there (the command, its
        // environment, the fifos) cannot be replaced or unlinked by the command (10001).
        tmpfsMounts.put("/tmp", "rw,exec,nosuid,nodev,size=" + limits.tmpfsBytes() + ",mode=1777");
        return HostConfig.newHostConfig()
                .withCapDrop(Capability.ALL)
                // Root's, for the bootstrap (see BOOTSTRAP_USER); the command gets none of them.
                .withCapAdd(Capability.SETUID, Capability.SETGID, Capability.SETPCAP, Capability.KILL)
                .withSecurityOpts(List.of("no-new-privileges"))
                .withReadonlyRootfs(true)
                .withTmpFs(tmpfsMounts)
                .withNetworkMode(limits.network() == null ? "none" : limits.network())
                // Equal memory and swap limits: no swap at all beyond the memory limit.
                .withMemory(limits.memoryBytes())
                .withMemorySwap(limits.memoryBytes())
                .withNanoCPUs(limits.nanoCpus())
                .withPidsLimit(limits.pids())
                .withShmSize(Math.min(limits.tmpfsBytes(), 64L << 20))
                // docker-init as PID 1: reaps zombies, and its death takes the whole tree down.
                .withInit(true)
                // Output reaches us only through attach; a json-file log would copy a flood to disk.
                .withLogConfig(new LogConfig(LogConfig.LoggingType.NONE))
                .withUlimits(List.of(new Ulimit("core", 0L, 0L)))
                // If the host itself runs short of memory, the kernel should pick a sandbox, not the worker.
                .withOomScoreAdj(1000);
    }

    /** The lease file, bind-mounted read-only: the command can read its deadline, never move it. */
    static HostConfig withLeaseFile(HostConfig host, Path leaseFile) {
        return withLeaseFile(host, leaseFile, null, null);
    }

    /**
     * The lease file (read-only); for a run that asked for egress, the node's egress proxy
     * socket: the container's network stays none, so the socket is its only way out; and the
     * directory of the attempt's API bridge socket ({@value Limits#API_SOCKET_NAME}), its way to
     * Outrun's API alone. A directory rather than the socket itself, so that a pooled container
     * (mounts fixed at its create) gets its run's socket later, by a hard link into it. Read-only:
     * connect(2) needs write permission on the socket file alone, which the mount does not take.
     */
    static HostConfig withLeaseFile(HostConfig host, Path leaseFile, Path egressSocket, Path apiDir) {
        List<Bind> binds = new ArrayList<>();
        if (leaseFile != null) {
            binds.add(new Bind(leaseFile.toAbsolutePath().toString(), new Volume(LEASE_MOUNT), AccessMode.ro));
        }
        if (egressSocket != null) {
            binds.add(new Bind(egressSocket.toAbsolutePath().toString(), new Volume(EGRESS_SOCKET), AccessMode.rw));
        }
        if (apiDir != null) {
            binds.add(new Bind(apiDir.toAbsolutePath().toString(), new Volume(API_DIR), AccessMode.ro));
        }
        return binds.isEmpty() ? host : host.withBinds(binds);
    }

    /** Where a run that asked for egress finds its node's proxy socket. */
    public static final String EGRESS_SOCKET = "/run/outrun-egress.sock";

    /** Where a run's API socket directory is mounted; the socket is {@link #API_SOCKET} (the worker's ApiBridge.CONTAINER_SOCKET). */
    public static final String API_DIR = "/run/outrun-api";
    public static final String API_SOCKET = API_DIR + "/" + Limits.API_SOCKET_NAME;

    static Map<String, String> labels(RunSpec spec, Owner owner) {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put(LABEL_OUTRUN, "1");
        labels.put(LABEL_EXECUTION, spec.executionId().toString());
        labels.put(LABEL_ATTEMPT, Integer.toString(spec.attempt()));
        labels.put(LABEL_EPOCH, Long.toString(spec.epoch()));
        owner.label(labels);
        if (spec.incarnation() != null) {
            labels.put(LABEL_INCARNATION, spec.incarnation());
        }
        return labels;
    }

    /** Only what the execution asked for, over the defaults that make tools print plainly. */
    static List<String> env(Map<String, String> asked, String workdir) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PATH", PATH);
        env.put("HOME", workdir);
        env.put("NO_COLOR", "1");
        env.put("TERM", "dumb");
        env.put("PAGER", "cat");
        asked.forEach((name, value) -> {
            if (name.isEmpty() || name.indexOf('=') >= 0 || name.indexOf('\0') >= 0 || value.indexOf('\0') >= 0) {
                throw new RunRefusedException("invalid environment variable name or value: " + name);
            }
            env.put(name, value);
        });
        List<String> list = new ArrayList<>(env.size());
        env.forEach((name, value) -> list.add(name + "=" + value));
        return list;
    }

    /**
     * The defaults of {@link #env} alone, once the run's variables passed its checks (they reach
     * only the command, through the env file; the root bootstrap never sees them).
     */
    private static List<String> defaultsAfterChecking(Map<String, String> runEnv, String workdir) {
        env(runEnv, workdir); // throws RunRefusedException for a name or value no container can take
        return env(Map.of(), workdir);
    }

    static String workdir(RunSpec spec) {
        String workdir = spec.workdir() == null || spec.workdir().isBlank() ? DEFAULT_WORKDIR : spec.workdir();
        try {
            return Workdir.check(workdir);
        } catch (IllegalArgumentException e) {
            throw new RunRefusedException("workdir " + e.getMessage(), e);
        }
    }

    /** The header's stdin field: 0 /dev/null, 1 a pipe, 2 a terminal. */
    static int stdinField(RunSpec spec) {
        return switch (spec.stdin()) {
            case NONE -> 0;
            case PIPE -> 1;
            case TTY -> 2;
        };
    }

    /** What goes to a fresh container's stdin: see {@link #runBytes} (its backstop came as an argument). */
    static InputStream commandStdin(RunSpec spec) {
        return new ByteArrayInputStream(runBytes(spec, 0));
    }
}
