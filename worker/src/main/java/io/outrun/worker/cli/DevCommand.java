package io.outrun.worker.cli;

import io.outrun.api.auth.TokenStore;
import io.outrun.api.http.ApiConfig;
import io.outrun.api.http.ApiNode;
import io.outrun.core.secrets.SecretsKey;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.core.trace.Tracing;
import io.outrun.sandbox.Sandbox;
import io.outrun.worker.dev.DataDirLock;
import io.outrun.worker.dev.DevDirException;
import io.outrun.worker.dev.OrphanPostgres;
import io.outrun.worker.node.DashboardAccess;
import io.outrun.worker.node.WorkerConfig;
import io.outrun.worker.node.WorkerNode;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Base64;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Everything in one process for a laptop: an embedded PostgreSQL keeping its data in
 * {@code --data-dir} (so executions survive a restart), the API, a worker and JobRunr's
 * dashboard, with the owner {@code dev} whose token is written to {@code DIR/dev-token}.
 *
 * <p>One {@code outrun dev} per data directory, proved by {@link DataDirLock}; a PostgreSQL left
 * running there by one that crashed is stopped first ({@link OrphanPostgres}), so a restart after
 * SIGKILL just works. PostgreSQL runs durably ({@code fsync}, {@code synchronous_commit}): an
 * execution answered {@code 202} is on disk.
 */
@Command(name = "dev", mixinStandardHelpOptions = true, description = {
        "Run PostgreSQL (embedded), the API, a worker and the dashboard in one process.",
        "Needs only a JDK. --sandbox auto (the default) uses Docker when an engine answers, else host processes."})
final class DevCommand implements Callable<Integer> {

    static final String OWNER = "dev";

    /** The dashboard's basic-auth user; its password is generated into {@code DIR/dashboard-password}. */
    static final String DASHBOARD_USER = "dev";

    @Option(names = "--data-dir", defaultValue = ".outrun", description = "Where data and the dev token live (default ${DEFAULT-VALUE})")
    Path dataDir;

    @Option(names = "--dashboard-port", defaultValue = "8000",
            description = "JobRunr dashboard port, behind basic auth (user dev, password in DIR/dashboard-password); 0 = off (default ${DEFAULT-VALUE})")
    int dashboardPort;

    @Option(names = "--slots", defaultValue = "4", description = "Executions run at once (default ${DEFAULT-VALUE})")
    int slots;

    @Mixin
    OwnerOptions owners;

    @Mixin
    FilesOptions files;

    @Mixin
    ApiOptions apiOptions;

    @Mixin
    SandboxOptions sandboxOptions;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        files.activate();
        Stack stack = start(spec.commandLine().getOut(), spec.commandLine().getErr());
        CountDownLatch stopped = new CountDownLatch(1);
        PrintWriter err = spec.commandLine().getErr();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stack.stop(err);
            Tracing.closeProcess(); // after the drain: its attempts' spans are exported
            stopped.countDown();
        }, "outrun-shutdown"));
        stopped.await();
        return 0;
    }

    /** What {@code outrun dev} runs; closing it stops everything in reverse order. */
    static final class Stack implements AutoCloseable {
        final DataDirLock lock;
        final EmbeddedPostgres postgres;
        final Core core;
        final WorkerNode worker;
        final ApiNode api;
        final String token;

        Stack(DataDirLock lock, EmbeddedPostgres postgres, Core core, WorkerNode worker, ApiNode api, String token) {
            this.lock = lock;
            this.postgres = postgres;
            this.core = core;
            this.worker = worker;
            this.api = api;
            this.token = token;
        }

        /**
         * A stop (SIGTERM, Ctrl-C) drains as a worker does: running executions get
         * {@link #STOP_GRACE} to finish, the rest are handed back without spending an attempt
         * and run again at the next start; then everything stops. Said in one line.
         */
        void stop(PrintWriter err) {
            int running = worker == null ? 0 : worker.running();
            if (running > 0) {
                err.println("outrun dev: stopping; " + running + " running execution(s) get " + STOP_GRACE.toSeconds()
                        + " s to finish, the rest are handed back (no attempt spent) and run again at the next start");
                err.flush();
                worker.drain(STOP_GRACE);
            }
            close();
        }

        /** How long running executions may finish when {@code outrun dev} stops. */
        static final Duration STOP_GRACE = Duration.ofSeconds(2);

        @Override
        public void close() {
            // The lock last: the directory is free only once PostgreSQL has stopped.
            for (AutoCloseable part : new AutoCloseable[] {api, worker, core, postgres, lock}) {
                if (part == null) {
                    continue;
                }
                try {
                    part.close();
                } catch (Exception e) {
                    System.err.println("outrun: stopping " + part.getClass().getSimpleName() + " failed: " + e);
                }
            }
        }
    }

    @picocli.CommandLine.Mixin
    SecretsKeyOptions secretsKeyOptions;

    @picocli.CommandLine.Mixin
    WebhookOptions webhookOptions;

    Stack start(PrintWriter out, PrintWriter err) {
        // The worker runs in this process: the API refuses at submit what it would refuse.
        ApiConfig apiConfig = apiOptions.toConfig("127.0.0.1").withImageAllowlist(sandboxOptions.imagesAllowed())
                .withEgress(sandboxOptions.egress());
        Path dir = dataDir.toAbsolutePath().normalize();
        DataDirLock lock = DataDirLock.acquire(dir);
        // The sandbox first: a Docker engine or image that is not there fails (or falls back) in
        // a second, before PostgreSQL is started for nothing. --sandbox auto uses Docker when an
        // engine answers with the image and warns loudly when it falls back to host processes
        // (SandboxOptions owns that choice for every role; the banner says it too).
        String nodeId = WorkerCommand.defaultNodeId();
        Sandbox sandbox;
        try {
            // Its runs never see the data dir (the token, the database password), nor PostgreSQL's files.
            sandboxOptions.hide(dir);
            if (secretsKeyOptions.file != null) {
                sandboxOptions.hide(secretsKeyOptions.file.toAbsolutePath()); // the key that opens every secret
            }
            sandbox = sandboxOptions.open(nodeId);
        } catch (RuntimeException e) {
            lock.close();
            throw e;
        }
        EmbeddedPostgres postgres;
        try {
            Optional<Long> orphan = OrphanPostgres.stopIfRunning(dir.resolve("postgres"));
            orphan.ifPresent(pid -> {
                err.println("outrun: stopped the PostgreSQL (pid " + pid + ") left running in " + dir
                        + " by an earlier `outrun dev` that did not stop it");
                err.flush();
            });
            postgres = startPostgres(dir, secret(dir.resolve(DB_PASSWORD_FILE)));
        } catch (RuntimeException e) {
            sandbox.close();
            lock.close();
            throw e;
        }
        Core core = null;
        WorkerNode worker = null;
        ApiNode api = null;
        try {
            DatabaseConfig db = new DatabaseConfig(postgres.getJdbcUrl("postgres", "postgres"), "postgres",
                    secret(dir.resolve(DB_PASSWORD_FILE)));
            core = Core.open(db, "dev", owners.toLimits());
            String token = devToken(new TokenStore(core.pool()), dir.resolve("dev-token"));
            // The dashboard shows every command (and its secrets) and can delete jobs; it listens
            // on all interfaces (JobRunr has no bind option), so never without a password.
            String dashboardPassword = dashboardPort > 0 ? secret(dir.resolve("dashboard-password")) : null;
            // Its runs' lease files in its own data dir, not the host's shared /tmp/outrun-leases.
            SecretsKey key = secretsKey(dir);
            apiConfig = apiConfig.withSecretsKey(key).withWebhooks(webhookOptions.policy());
            WorkerConfig workerConfig = WorkerConfig.defaults(nodeId).withSlots(slots).withLeaseDir(dir.resolve("leases"))
                    .withLimits(sandboxOptions.limits()).withEgress(sandboxOptions.egress()).withSecretsKey(key)
                    .withWebhooks(webhookOptions.policy())
                    .withDashboard(dashboardPort, dashboardPassword != null
                            ? DashboardAccess.basic(DASHBOARD_USER, dashboardPassword) : DashboardAccess.NONE);
            // The API first: its runs reach it at the port it got, and their tokens name the issuer
            // it checks (its --public-url, else that same address: ApiServer.issuer's rule).
            api = ApiNode.start(core, apiConfig, "dev");
            String host = apiConfig.host().equals("0.0.0.0") || apiConfig.host().equals("::") ? "127.0.0.1"
                    : apiConfig.host().contains(":") ? "[" + apiConfig.host() + "]" : apiConfig.host();
            worker = WorkerNode.start(core, workerConfig.withApi("http://" + host + ":" + api.port(),
                    apiConfig.identity().publicUrl()), sandbox);
            Stack stack = new Stack(lock, postgres, core, worker, api, token);
            printWelcome(out, apiConfig, api.port(), dir, sandbox.name(), db.url().replaceFirst("\\?.*$", ""), dashboardPassword);
            return stack;
        } catch (RuntimeException e) {
            if (worker == null) {
                sandbox.close(); // a started worker closes its own
            }
            new Stack(lock, postgres, core, worker, api, null).close();
            throw e;
        }
    }

    /** The embedded database's password, generated into the data dir (owner-only). */
    static final String DB_PASSWORD_FILE = "db-password";

    /**
     * Starts the embedded PostgreSQL with a password. initdb (run by the library) trusts every
     * local user as superuser, on the socket and on loopback: any account of the machine could then
     * forge an admin token, read every execution's env and run {@code COPY … TO PROGRAM}. So each
     * start sets the password of {@code postgres} to the one kept in {@value #DB_PASSWORD_FILE},
     * makes every connection ask for it (scram-sha-256 in pg_hba.conf) and lets only the data
     * dir's owner reach the socket.
     */
    static EmbeddedPostgres startPostgres(Path dir, String password) {
        EmbeddedPostgres postgres;
        try {
            Files.createDirectories(dir);
            postgres = EmbeddedPostgres.builder()
                    .setDataDirectory(dir.resolve("postgres"))
                    // Keep the data: executions and tokens survive a restart of `outrun dev`.
                    .setCleanDataDirectory(false)
                    // Stopped by our own shutdown hook, after the worker and the API (its own hook
                    // would stop it while they still write their last state).
                    .setRegisterShutdownHook(false)
                    // The library's default is synchronous_commit=off: a crash could lose a
                    // submission already answered 202. Durable costs ~0.1 ms per commit here.
                    .setServerConfig("synchronous_commit", "on")
                    .setServerConfig("fsync", "on")
                    .setServerConfig("unix_socket_permissions", "0700")
                    .setServerConfig("password_encryption", "scram-sha-256")
                    // The library's own readiness check connects too: with the password.
                    .setConnectConfig("password", password)
                    .start();
        } catch (IOException | RuntimeException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new DevDirException("cannot start the embedded PostgreSQL in " + dir.resolve("postgres") + ": "
                    + cause.getMessage() + (String.valueOf(cause.getMessage()).contains("password")
                    ? " (its password is in " + dir.resolve(DB_PASSWORD_FILE) + "; restore that file, or remove "
                    + dir + " to start afresh)" : ""), e);
        }
        try {
            lockDown(postgres, dir.resolve("postgres"), password);
            return postgres;
        } catch (IOException | SQLException | RuntimeException e) {
            try {
                postgres.close();
            } catch (IOException closing) {
                e.addSuppressed(closing);
            }
            throw new DevDirException("cannot set the embedded PostgreSQL's password in " + dir.resolve("postgres")
                    + ": " + e.getMessage(), e);
        }
    }

    private static final String HBA = """
            # Written by outrun dev at every start: every connection needs the password in db-password.
            local all all scram-sha-256
            host all all 127.0.0.1/32 scram-sha-256
            host all all ::1/128 scram-sha-256
            """;

    private static void lockDown(EmbeddedPostgres postgres, Path data, String password)
            throws IOException, SQLException {
        Properties props = new Properties();
        props.setProperty("user", "postgres");
        props.setProperty("password", password);
        try (Connection c = DriverManager.getConnection(postgres.getJdbcUrl("postgres", "postgres"), props);
             Statement st = c.createStatement()) {
            // The password is base64url (secret): no quote can end the literal. ALTER ROLE takes no
            // bind parameter (a utility statement), so the literal is written into the text.
            st.execute("SET password_encryption = 'scram-sha-256'");
            st.execute("ALTER ROLE postgres PASSWORD '" + password + "'");
            Path hba = data.resolve("pg_hba.conf");
            if (!Files.exists(hba) || !Files.readString(hba).equals(HBA)) {
                Files.writeString(hba, HBA);
                st.execute("SELECT pg_reload_conf()");
            }
        }
    }

    /** The dev owner's token: the one in {@code file} while it is still valid, else a new one. */
    static String devToken(TokenStore tokens, Path file) {
        try {
            if (Files.isReadable(file)) {
                String existing = Files.readString(file).strip();
                if (tokens.ownerOf(existing).filter(OWNER::equals).isPresent()) {
                    return existing;
                }
            }
            String token = tokens.create(OWNER).token();
            writePrivate(file, token);
            return token;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the dev token to " + file, e);
        }
    }

    /** The secret kept in {@code file} (owner-only), made up on first use so it stays across restarts. */
    /**
     * The key that seals dev's secrets: {@code --secrets-key-file} or {@code OUTRUN_SECRETS_KEY}
     * when given, else {@code DIR/secrets-key}, made (0600) at the first start and kept, so
     * secrets set in one session open in the next.
     */
    private SecretsKey secretsKey(Path dir) {
        SecretsKey given = secretsKeyOptions.key();
        if (given != null) {
            return given;
        }
        Path file = dir.resolve("secrets-key");
        try {
            if (!Files.exists(file)) {
                writePrivate(file, SecretsKey.generate());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        return SecretsKey.fromFile(file);
    }

    static String secret(Path file) {
        try {
            if (Files.isReadable(file)) {
                String existing = Files.readString(file).strip();
                if (existing.length() >= 16) {
                    return existing;
                }
            }
            byte[] random = new byte[18];
            new SecureRandom().nextBytes(random);
            String secret = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
            writePrivate(file, secret);
            return secret;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    /** Writes {@code value} to a file only its owner can read (mode 0600 from creation on). */
    private static void writePrivate(Path file, String value) throws IOException {
        Files.deleteIfExists(file);
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(file, value + "\n");
    }

    private void printWelcome(PrintWriter to, ApiConfig config, int port, Path dir, String sandbox, String dbUrl,
                              String dashboardPassword) {
        // Built whole and written at once, so whoever reads the output never sees half a banner.
        StringWriter banner = new StringWriter();
        PrintWriter out = new PrintWriter(banner);
        String url = "http://" + (config.host().equals("0.0.0.0") ? "localhost" : config.host()) + ":" + port;
        Path cwd = Path.of("").toAbsolutePath();
        Path tokenFile = dir.resolve("dev-token");
        String tokenPath = shown(tokenFile, cwd);
        out.println();
        out.println("outrun dev is ready  (data in " + dir + ", sandbox " + sandbox + ")");
        if (sandboxOptions.unisolatedReason() != null) {
            out.println("  sandbox    host processes WITHOUT bubblewrap (" + sandboxOptions.unisolatedReason() + "):"
                    + " runs can read your files and leave processes behind.");
        } else if (sandbox.equals("process")) {
            out.println("  sandbox    host processes in bubblewrap: each run in its own PID namespace, your files"
                    + " read-only but its workdir, no network, " + dir.getFileName() + " hidden");
        }
        if (sandboxOptions.fallbackReason() != null) {
            out.println("  sandbox    HOST PROCESSES, NO ISOLATION: commands run as this user on this machine. Docker was"
                    + " not usable: " + sandboxOptions.fallbackReason() + ". Build the sandbox image with"
                    + " sandbox/image/build.sh (or start Docker), then restart; --sandbox docker refuses to start instead.");
        }
        out.println("  API        " + url + "   owner `" + OWNER + "`, token in " + tokenPath);
        out.println("  MCP        " + url + "/mcp (streamable HTTP, same token), or `outrun mcp` over stdio (see README)");
        if (dashboardPort > 0) {
            out.println("  dashboard  http://localhost:" + dashboardPort + "   user " + DASHBOARD_USER + ", password "
                    + dashboardPassword + " (in " + shown(dir.resolve("dashboard-password"), cwd)
                    + "; JobRunr, on all interfaces; --dashboard-port 0 turns it off)");
        }
        // The port changes on every start; operator commands (token, prune) need it while dev runs.
        String passwordFile = shown(dir.resolve(DB_PASSWORD_FILE), cwd);
        out.println("  database   " + dbUrl + "   user postgres, password in " + passwordFile
                + " (e.g. outrun token create --owner alice --db-url " + dbUrl + " --db-user postgres"
                + " --db-password \"$(cat " + passwordFile + ")\")");
        out.println();
        out.println("Submit a first command:");
        out.println("  curl -s " + url + "/v1/executions -H \"Authorization: Bearer $(cat " + tokenPath + ")\" \\");
        out.println("       -H 'Content-Type: application/json' -d '{\"command\": \"echo hello from outrun\", \"waitMs\": 10000}'");
        out.println("  java -jar worker/target/outrun.jar run --api " + url + " --follow -- 'for i in 1 2 3; do echo step $i; sleep 1; done'");
        out.println();
        out.println("Stop with Ctrl-C; executions and the token are kept in " + dir + ".");
        out.flush();
        to.print(banner);
        to.flush();
    }

    private static String shown(Path file, Path cwd) {
        return file.startsWith(cwd) ? cwd.relativize(file).toString() : file.toString();
    }

}
