package io.outrun.testing;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A real PgBouncer (Debian's package, installed by .ci/run) in transaction pooling mode in front
 * of a test database, on loopback. Without pgbouncer the test fails under CI=true and is skipped
 * elsewhere ({@link Requirements#binary}).
 */
public final class PgBouncer implements AutoCloseable {

    private final Process process;
    private final Path dir;
    private final String url;

    private PgBouncer(Process process, Path dir, String url) {
        this.process = process;
        this.dir = dir;
        this.url = url;
    }

    /** PgBouncer in front of the database at JDBC URL {@code direct}, letting {@code user} in; {@link #url()} pools through it. */
    public static PgBouncer inFrontOf(String direct, String user) throws IOException, InterruptedException {
        Path pgbouncer = Requirements.binary("pgbouncer");
        URI uri = URI.create(direct.substring("jdbc:".length()));
        String database = uri.getPath().substring(1);
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path dir = Files.createTempDirectory("outrun-pgbouncer-");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        Files.writeString(dir.resolve("users.txt"), "\"" + user + "\" \"\"\n");
        Files.writeString(dir.resolve("pgbouncer.ini"), String.join("\n",
                "[databases]",
                database + " = host=" + uri.getHost() + " port=" + uri.getPort() + " dbname=" + database,
                "[pgbouncer]",
                "listen_addr = 127.0.0.1",
                "listen_port = " + port,
                "unix_socket_dir =",
                "auth_type = trust",
                "auth_file = " + dir.resolve("users.txt"),
                "pool_mode = transaction",
                "max_client_conn = 500",
                "default_pool_size = 10",
                "ignore_startup_parameters = extra_float_digits",
                "logfile = " + dir.resolve("pgbouncer.log"),
                ""));
        for (String f : new String[] {"users.txt", "pgbouncer.ini"}) {
            Files.setPosixFilePermissions(dir.resolve(f), PosixFilePermissions.fromString("rw-r--r--"));
        }
        // PgBouncer refuses to run as root: -u drops to an unprivileged user.
        ProcessBuilder pb = "root".equals(System.getProperty("user.name"))
                ? new ProcessBuilder(pgbouncer.toString(), "-u", "nobody", dir.resolve("pgbouncer.ini").toString())
                : new ProcessBuilder(pgbouncer.toString(), dir.resolve("pgbouncer.ini").toString());
        Process p = pb.redirectErrorStream(true).redirectOutput(dir.resolve("stdout.log").toFile()).start();
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (true) {
            try (Socket ignored = new Socket("127.0.0.1", port)) {
                break;
            } catch (IOException e) {
                if (!p.isAlive() || System.nanoTime() > deadline) {
                    throw new IllegalStateException("pgbouncer did not start: " + Files.readString(dir.resolve("stdout.log"))
                            + (Files.exists(dir.resolve("pgbouncer.log")) ? Files.readString(dir.resolve("pgbouncer.log")) : ""));
                }
                Thread.sleep(50);
            }
        }
        return new PgBouncer(p, dir, "jdbc:postgresql://127.0.0.1:" + port + "/" + database);
    }

    /** The JDBC URL of the same database through PgBouncer (sessions still go to the direct URL). */
    public String url() {
        return url;
    }

    /** How many client connections PgBouncer served (its SHOW STATS would say more; its log suffices here). */
    public String log() throws IOException {
        Path log = dir.resolve("pgbouncer.log");
        return Files.exists(log) ? Files.readString(log) : "";
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }
}
