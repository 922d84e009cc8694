package io.outrun.worker.attempt;

import io.outrun.core.config.ConfigException;
import io.outrun.core.execution.Execution;
import io.outrun.core.files.FilesConfig;
import io.outrun.core.identity.SigningKeys;
import io.outrun.core.identity.TokenIssuer;
import io.outrun.core.secrets.SecretsKey;
import io.outrun.core.execution.Resources;
import io.outrun.core.secrets.SecretStore;
import io.outrun.core.trace.TraceContext;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxException;
import io.outrun.sandbox.docker.DockerSandbox;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.sandbox.script.BashScript;
import io.outrun.model.egress.EgressPolicy;
import io.outrun.worker.bridge.ApiAccess;
import io.outrun.worker.bridge.ApiBridge;
import io.outrun.worker.lease.Attempt;
import io.outrun.worker.lease.LeaseKeeper;
import io.outrun.worker.metrics.NodeMetrics;
import io.outrun.worker.proxy.EgressProxy;
import io.outrun.worker.workdir.WorkdirBridge;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns a claimed execution into what the sandbox runs: the node's limits with the execution's
 * own, its identity in its env, its input files, its secrets (opened with this node's key just
 * before the start), its own listener on the node's egress proxy, its way to Outrun's API and
 * its tokens (issue 31), its lease file and its trace context. What the run is given of the node
 * ({@link Prepared}) is closed with it.
 */
public final class RunPreparation implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RunPreparation.class);

    private static final String PROXY_URL = "http://127.0.0.1:" + EgressProxy.CONTAINER_PORT;

    /** What makes pip, npm, git and curl go through the relay; the container's own loopback stays direct. */
    static final Map<String, String> EGRESS_ENV = Map.of(
            "HTTP_PROXY", PROXY_URL, "HTTPS_PROXY", PROXY_URL, "http_proxy", PROXY_URL, "https_proxy", PROXY_URL,
            "NO_PROXY", "localhost,127.0.0.1,::1", "no_proxy", "localhost,127.0.0.1,::1");

    /**
     * The relay in the run's container (network none): 127.0.0.1:3128 to the proxy's socket,
     * started in the background and waited for (up to 1 s) before the command's first line
     * ({@code egress-relay.sh}, one line of code).
     */
    public static final String EGRESS_RELAY = BashScript.of(RunPreparation.class, "egress-relay.sh").oneLine() + " ";

    private final String node;
    private final Limits limits;
    private final LeaseKeeper keeper;
    private final WorkdirBridge workdirs;
    /** Opens the secrets a run names, with this node's key, just before its start. */
    private final SecretStore secrets;
    /** The node's egress proxy (null: none); an egress run's attempt gets a listener of its own. */
    private final EgressProxy egress;
    /** Signs each attempt's tokens and opens its way to Outrun's API (issue 31). */
    private final ApiAccess api;

    RunPreparation(String node, Limits limits, LeaseKeeper keeper, WorkdirBridge workdirs, SecretStore secrets,
                          EgressProxy egress, ApiAccess api) {
        this.node = node;
        this.limits = limits;
        this.keeper = keeper;
        this.workdirs = workdirs;
        this.secrets = secrets;
        this.egress = egress;
        this.api = api;
    }

    /**
     * What a node gives its runs, from its configuration.
     *
     * @param egress     the hosts egress runs may reach ({@code --egress-allow}; empty: no proxy)
     * @param secretsKey opens the owners' secrets and the fleet's signing key (null: none)
     * @param apiUrl     Outrun's API as this node reaches it ({@code --api-url}; null: none)
     * @param issuerUrl  the issuer of run tokens (null: none)
     */
    public record Setup(String node, Limits limits, Path leaseDir, EgressPolicy egress, SecretsKey secretsKey,
                        String apiUrl, String issuerUrl) {
    }

    /**
     * Starts what the node's runs are given of it: its egress proxy (container runs only: they
     * alone can be given the proxy alone, network none plus its socket; host processes have the
     * host's network, or none under bubblewrap) and its way to Outrun's API. A failure half-way
     * closes what started.
     */
    public static RunPreparation open(Setup setup, Sandbox sandbox, DataSource pool, LeaseKeeper keeper, NodeMetrics metrics) {
        EgressProxy egress = "docker".equals(sandbox.name()) ? startEgress(setup) : null;
        if (egress == null && !setup.egress().isEmpty()) {
            LOG.warn("--egress-allow is ignored by the {} sandbox: egress runs are for container runs", sandbox.name());
        }
        if (egress != null) {
            metrics.counter("outrun.node.egress.connections", "Connections runs opened through this node's egress proxy",
                    egress, p -> p.allowedConnections(), "result", "allowed");
            metrics.counter("outrun.node.egress.connections", "Connections runs opened through this node's egress proxy",
                    egress, p -> p.refusedConnections(), "result", "refused");
        }
        ApiAccess api;
        try {
            api = startApi(setup, sandbox, pool);
        } catch (RuntimeException | Error e) {
            if (egress != null) {
                egress.close();
            }
            throw e;
        }
        WorkdirBridge workdirs = new WorkdirBridge(pool, FilesConfig.active(),
                Path.of(System.getProperty("java.io.tmpdir"), "outrun-spool-" + setup.node()));
        return new RunPreparation(setup.node(), setup.limits(), keeper, workdirs, new SecretStore(pool, setup.secretsKey()),
                egress, api);
    }

    /** The egress proxy, listening on a socket in the lease dir (the engine sees that path already). */
    private static EgressProxy startEgress(Setup setup) {
        if (setup.egress().isEmpty()) {
            return null;
        }
        Path socket = setup.leaseDir().resolve("egress-" + setup.node());
        try {
            EgressProxy proxy = EgressProxy.start(socket, setup.egress());
            LOG.info("egress proxy in {}: runs with network=egress reach {}", socket, setup.egress().text());
            return proxy;
        } catch (IOException e) {
            throw new ConfigException("--egress-allow: cannot listen on " + socket + ": " + e.getMessage());
        }
    }

    /**
     * What this node's runs get of Outrun's API: tokens signed with the fleet's key when the node
     * has an issuer ({@code --public-url} or {@code --api-url}) and the secrets key that opens the
     * key; container runs reach {@code --api-url} through the node's bridge (their network stays
     * none), and so do host processes whose network bubblewrap took; other host processes reach
     * it directly.
     */
    private static ApiAccess startApi(Setup setup, Sandbox sandbox, DataSource pool) {
        TokenIssuer issuer = null;
        String whyNot = null;
        if (setup.issuerUrl() == null) {
            whyNot = "this node has no --api-url or --public-url, the issuer of run tokens";
        } else if (setup.secretsKey() == null) {
            whyNot = "this node has no --secrets-key-file, which seals the fleet's signing key";
        } else {
            issuer = new TokenIssuer(new SigningKeys(pool, setup.secretsKey()), setup.issuerUrl());
        }
        ApiBridge bridge = null;
        String direct = null;
        String apiUrl = setup.apiUrl();
        boolean docker = "docker".equals(sandbox.name());
        Path dir = setup.leaseDir().resolve("api-" + setup.node());
        // Host processes under bubblewrap have no network: they reach the bridge's socket, bound
        // into their namespace at its host path, through a relay the sandbox starts (socat on the
        // host; ProcessSandbox.withApiRelay).
        boolean isolated = sandbox instanceof ProcessSandbox p && p.isIsolated() && setup.limits().network() == null;
        boolean bridged = apiUrl != null && (docker
                || (isolated && Files.isExecutable(Path.of("/usr/bin/socat")) && ApiAccess.relayablePath(dir)));
        if (bridged) {
            try {
                bridge = ApiBridge.start(dir, apiUrl, docker);
            } catch (IOException e) {
                throw new ConfigException("--api-url: cannot listen in " + dir + ": " + e.getMessage());
            }
            // The sandbox runs each run's relay, ahead of the run where it can (its pooled
            // containers, its spares): a run that never calls $OUTRUN_API pays nothing for it.
            if (sandbox instanceof DockerSandbox d) {
                d.withApiRelay();
            } else if (sandbox instanceof ProcessSandbox p) {
                p.withApiRelay(dir);
            }
        } else if (apiUrl != null && sandbox instanceof ProcessSandbox && !isolated) {
            direct = apiUrl;
        } else if (apiUrl != null && isolated) {
            LOG.warn("runs under bubblewrap cannot reach the API: the bridge needs /usr/bin/socat and a lease dir path of"
                    + " letters, digits and /._+- only ({})", dir);
        }
        ApiAccess access = new ApiAccess(issuer, whyNot, bridge, direct);
        access.describe(sandbox.name());
        return access;
    }

    /** Stops the node's egress proxy and its way to the API (the node stops). */
    @Override
    public void close() {
        try {
            if (egress != null) {
                egress.close();
            }
        } finally {
            api.close();
        }
    }

    /** What one run is given of the node, for its start and until its end. */
    public final class Prepared implements AutoCloseable {
        private final Execution execution;
        private WorkdirBridge.Prepared files;
        private RunSpec spec;
        private EgressProxy.Listener way;
        private ApiAccess.Grant granted;

        private Prepared(Execution execution) {
            this.execution = execution;
        }

        public RunSpec spec() {
            return spec;
        }

        /** The run's memory limit, as the kernel enforces it (0: none). */
        public long memoryBytes() {
            return spec.limits().memoryBytes();
        }

        /** Its run started: the owner reads in its stderr why a host was not reached. */
        void started(Run run) {
            if (way != null) {
                way.noteRefusalsTo(run::noteStderr);
            }
        }

        /** Keeps what the ended run left (its artifacts, full output, workspace), under its lease. */
        void collect(Attempt attempt, Run run) {
            workdirs.collect(attempt.lease(), execution, files.inputs(), run, attempt.trace());
        }

        /** Every connection of the run ends with it, and its way to the API (its token is refused from now on). */
        @Override
        public void close() {
            try {
                if (way != null) {
                    way.close();
                }
            } finally {
                if (granted != null) {
                    granted.close();
                }
            }
        }
    }

    /**
     * The run of {@code attempt}, ready for the sandbox; each piece is on {@code into} as soon as
     * it is opened, so whoever catches a failure half-way closes exactly what was opened.
     */
    Prepared begin(Execution execution) {
        return new Prepared(execution);
    }

    void prepare(Prepared into, Attempt attempt, boolean hasInputs) {
        Execution execution = into.execution;
        into.files = workdirs.prepare(execution, hasInputs);
        RunSpec spec = spec(execution, node, limits, egress).withLeaseFile(keeper.leaseFile(attempt.lease()))
                .withFiles(into.files.files());
        spec = withTraceContext(spec, attempt.trace().forCommand());
        if (!into.files.inputs().secrets().isEmpty()) {
            spec = spec.withSecrets(secrets.open(execution.owner(), into.files.inputs().secrets()));
        }
        if (egress != null && execution.resources().egress()) {
            into.way = openEgress(execution, attempt);
            spec = spec.withLimits(spec.limits().withEgressSocket(into.way.socket()));
        }
        // A short name: a unix socket's path has at most 107 bytes, and the lease dir and node id come first.
        into.granted = api.grant(execution, execution.id().toString().substring(0, 8) + "-" + attempt.lease().epoch());
        into.spec = into.granted.applyTo(spec);
    }

    private EgressProxy.Listener openEgress(Execution execution, Attempt attempt) {
        try {
            return egress.open(execution.id() + "-" + attempt.lease().epoch());
        } catch (IOException e) {
            throw new SandboxException("cannot open the egress proxy for this run: " + e.getMessage(), e);
        }
    }

    /** What the sandbox runs for {@code e} on {@code node}, before anything of the attempt's own. */
    static RunSpec spec(Execution e, String node, Limits limits, EgressProxy egress) {
        Limits runLimits = limits(limits, e.resources());
        Map<String, String> env = withIdentity(e);
        String command = e.command();
        if (e.resources().egress() && egress != null) {
            // The socket itself is the attempt's own, opened in prepare.
            env.putAll(EGRESS_ENV);
            // On the command's first line, so bash's line numbers in its errors stay the user's.
            command = EGRESS_RELAY + command;
        }
        return new RunSpec(e.id(), e.attempt(), e.leaseEpoch(), node, e.leaseHolder(), command, e.image(), e.workdir(),
                env, Duration.ofMillis(e.timeoutMs()), e.maxOutputBytes(), runLimits, null)
                .withStdin(e.stdin().mode());
    }

    /**
     * The node's limits with what the execution asked for in their place (the API clamped it to
     * the operator's maxima); the node's network setting is the node's.
     */
    static Limits limits(Limits node, Resources asked) {
        if (asked.isEmpty()) {
            return node;
        }
        return new Limits(
                asked.memoryMb() == null ? node.memoryBytes() : (long) asked.memoryMb() << 20,
                asked.cpuMillis() == null ? node.nanoCpus() : asked.cpuMillis() * 1_000_000L,
                asked.pids() == null ? node.pids() : asked.pids(),
                asked.tmpfsMb() == null ? node.tmpfsBytes() : (long) asked.tmpfsMb() << 20,
                node.network());
    }

    /**
     * The command knows itself: its execution id, attempt and owner, set over anything of the same
     * name in the submission's env (a script that logs or names its outputs by run needs them).
     */
    static Map<String, String> withIdentity(Execution e) {
        Map<String, String> env = new LinkedHashMap<>(e.env());
        env.put("OUTRUN_EXECUTION_ID", e.id().toString());
        env.put("OUTRUN_ATTEMPT", Integer.toString(e.attempt()));
        env.put("OUTRUN_OWNER", e.owner());
        return env;
    }

    /**
     * The command joins the execution's trace through {@code TRACEPARENT} / {@code TRACESTATE}
     * (the W3C names OpenTelemetry's SDKs read for a process's parent) unless its owner set them.
     */
    private static RunSpec withTraceContext(RunSpec spec, TraceContext trace) {
        // The owner's own (its operator allowed them): both kept, never one of each trace.
        if (trace == null || spec.env().containsKey("TRACEPARENT") || spec.env().containsKey("TRACESTATE")) {
            return spec;
        }
        Map<String, String> env = new LinkedHashMap<>(spec.env());
        env.put("TRACEPARENT", trace.traceparent());
        if (trace.tracestate() != null) {
            env.putIfAbsent("TRACESTATE", trace.tracestate());
        }
        return spec.withEnv(env);
    }
}
