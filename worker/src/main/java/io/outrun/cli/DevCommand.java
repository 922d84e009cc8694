package io.outrun.cli;

import io.outrun.auth.TokenStore;
import io.outrun.http.ApiConfig;
import io.outrun.http.ApiNode;
import io.outrun.sandbox.Sandbox;
import io.outrun.service.Core;
import io.outrun.store.DatabaseConfig;
import io.outrun.worker.WorkerConfig;
import io.outrun.worker.WorkerNode;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Everything in one process for a laptop: an embedded PostgreSQL keeping its data in
 * {@code --data-dir} (so executions survive a restart), the API, a worker and JobRunr's
 * dashboard, with the owner {@code dev} whose token is written to {@code DIR/dev-token}.
 */
@Command(name = "dev", mixinStandardHelpOptions = true, description = {
        "Run PostgreSQL (embedded), the API, a worker and the dashboard in one process.",
        "Needs only a JDK. --sandbox auto (the default) uses Docker when an engine answers, else host processes."})
final class DevCommand implements Callable<Integer> {

    static final String OWNER = "dev";

    @Option(names = "--data-dir", defaultValue = ".outrun", description = "Where data and the dev token live (default ${DEFAULT-VALUE})")
    Path dataDir;

    @Option(names = "--dashboard-port", defaultValue = "8000", description = "JobRunr dashboard port; 0 = off (default ${DEFAULT-VALUE})")
    int dashboardPort;

    @Option(names = "--slots", defaultValue = "4", description = "Executions run at once (default ${DEFAULT-VALUE})")
    int slots;

    @Mixin
    ApiOptions apiOptions;

    @Mixin
    SandboxOptions sandboxOptions;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        Stack stack = start(spec.commandLine().getOut(), spec.commandLine().getErr());
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stack.close();
            stopped.countDown();
        }, "outrun-shutdown"));
        stopped.await();
        return 0;
    }

    /** What {@code outrun dev} runs; closing it stops everything in reverse order. */
    static final class Stack implements AutoCloseable {
        final EmbeddedPostgres postgres;
        final Core core;
        final WorkerNode worker;
        final ApiNode api;
        final String token;

        Stack(EmbeddedPostgres postgres, Core core, WorkerNode worker, ApiNode api, String token) {
            this.postgres = postgres;
            this.core = core;
            this.worker = worker;
            this.api = api;
            this.token = token;
        }

        @Override
        public void close() {
            for (AutoCloseable part : new AutoCloseable[] {api, worker, core, postgres}) {
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

    Stack start(PrintWriter out, PrintWriter err) {
        // The worker runs in this process: the API refuses at submit what it would refuse.
        ApiConfig apiConfig = apiOptions.toConfig("127.0.0.1").withImageAllowlist(sandboxOptions.imagesAllowed());
        Path dir = dataDir.toAbsolutePath().normalize();
        EmbeddedPostgres postgres = startPostgres(dir);
        Core core = null;
        WorkerNode worker = null;
        ApiNode api = null;
        try {
            DatabaseConfig db = new DatabaseConfig(postgres.getJdbcUrl("postgres", "postgres"), "postgres", "");
            core = Core.open(db, "dev", Duration.ofSeconds(15));
            String token = devToken(new TokenStore(core.pool()), dir.resolve("dev-token"));
            String nodeId = WorkerCommand.defaultNodeId();
            // --sandbox auto (the default) uses Docker when an engine answers and warns loudly when
            // it falls back to host processes; SandboxOptions owns that choice for every role.
            Sandbox sandbox = sandboxOptions.open(nodeId);
            worker = WorkerNode.start(core, WorkerConfig.defaults(nodeId).withSlots(slots).withDashboardPort(dashboardPort),
                    sandbox, sandboxOptions.limits());
            api = ApiNode.start(core, apiConfig, "dev");
            Stack stack = new Stack(postgres, core, worker, api, token);
            printWelcome(out, apiConfig, api.port(), dir, sandbox.name(), db.url().replaceFirst("\\?.*$", ""));
            return stack;
        } catch (RuntimeException e) {
            new Stack(postgres, core, worker, api, null).close();
            throw e;
        }
    }

    private static EmbeddedPostgres startPostgres(Path dir) {
        try {
            Files.createDirectories(dir);
            return EmbeddedPostgres.builder()
                    .setDataDirectory(dir.resolve("postgres"))
                    // Keep the data: executions and tokens survive a restart of `outrun dev`.
                    .setCleanDataDirectory(false)
                    // Stopped by our own shutdown hook, after the worker and the API (its own hook
                    // would stop it while they still write their last state).
                    .setRegisterShutdownHook(false)
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the embedded PostgreSQL in " + dir.resolve("postgres")
                    + " (is another `outrun dev` using this --data-dir?)", e);
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
            Files.deleteIfExists(file);
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(file, token + "\n");
            return token;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the dev token to " + file, e);
        }
    }

    private void printWelcome(PrintWriter out, ApiConfig config, int port, Path dir, String sandbox, String dbUrl) {
        String url = "http://" + (config.host().equals("0.0.0.0") ? "localhost" : config.host()) + ":" + port;
        Path cwd = Path.of("").toAbsolutePath();
        Path tokenFile = dir.resolve("dev-token");
        String tokenPath = tokenFile.startsWith(cwd) ? cwd.relativize(tokenFile).toString() : tokenFile.toString();
        out.println();
        out.println("outrun dev is ready  (data in " + dir + ", sandbox " + sandbox + ")");
        out.println("  API        " + url + "   owner `" + OWNER + "`, token in " + tokenPath);
        out.println("  MCP        " + url + "/mcp (streamable HTTP, same token), or `outrun mcp` over stdio (see README)");
        if (dashboardPort > 0) {
            out.println("  dashboard  http://localhost:" + dashboardPort + "   (JobRunr; listens on all interfaces, --dashboard-port 0 turns it off)");
        }
        // The port changes on every start; operator commands (token, prune) need it while dev runs.
        out.println("  database   " + dbUrl + "   user postgres, no password (e.g. outrun token create --owner alice"
                + " --db-url " + dbUrl + " --db-user postgres)");
        out.println();
        out.println("Submit a first command:");
        out.println("  curl -s " + url + "/v1/executions -H \"Authorization: Bearer $(cat " + tokenPath + ")\" \\");
        out.println("       -H 'Content-Type: application/json' -d '{\"command\": \"echo hello from outrun\", \"waitMs\": 10000}'");
        out.println("  java -jar worker/target/outrun.jar run --api " + url + " --follow -- 'for i in 1 2 3; do echo step $i; sleep 1; done'");
        out.println();
        out.println("Stop with Ctrl-C; executions and the token are kept in " + dir + ".");
        out.flush();
    }

}
