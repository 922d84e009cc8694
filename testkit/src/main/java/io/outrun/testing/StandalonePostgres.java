package io.outrun.testing;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A PostgreSQL 15 server of its own (Debian's postgresql-15, installed by .ci/run), on loopback,
 * for a test that must stop, restart or promote servers, which the shared embedded server of
 * {@link TestDatabase} cannot: a primary ({@link #primary}), a streaming standby of it
 * ({@link #standbyOf}, pg_basebackup -R), a crash ({@link #stopImmediately}) and a promotion
 * ({@link #promote}). PostgreSQL refuses to run as root: then every server command runs as the
 * {@code postgres} user (runuser), as bench/fleet does. Without the binaries the test fails under
 * CI=true and is skipped elsewhere ({@link Requirements}).
 */
public final class StandalonePostgres implements AutoCloseable {

    /** Where Debian's postgresql-15 puts its binaries. */
    public static final Path BIN = Path.of("/usr/lib/postgresql/15/bin");

    private final Path data;
    private final int port;

    private StandalonePostgres(Path data, int port) {
        this.data = data;
        this.port = port;
    }

    /** A new primary in {@code dir/name} that a standby can stream from ({@link #standbyOf}). */
    public static StandalonePostgres primary(Path dir, String name) throws IOException, InterruptedException {
        requireBinaries();
        Path data = prepare(dir, name);
        run(List.of(BIN.resolve("initdb").toString(), "-D", data.toString(), "-U", "postgres", "--auth=trust",
                "-E", "UTF8", "--no-locale"), dir.resolve(name + "-initdb.log"));
        int port = freePort();
        Files.writeString(data.resolve("postgresql.conf"), String.join("\n",
                "port = " + port,
                "listen_addresses = '127.0.0.1'",
                "unix_socket_directories = '" + data + "'",
                "max_connections = 100",
                "fsync = off", // a test's server: its crash is a process's, never the machine's
                "wal_level = replica",
                "max_wal_senders = 5",
                "wal_keep_size = '64MB'",
                "synchronous_commit = on",
                "hot_standby = on",
                ""), StandardOpenOption.APPEND);
        Files.writeString(data.resolve("pg_hba.conf"), "host replication all 127.0.0.1/32 trust\n", StandardOpenOption.APPEND);
        StandalonePostgres pg = new StandalonePostgres(data, port);
        pg.start();
        return pg;
    }

    /**
     * A streaming standby of {@code primary} in {@code dir/name} (pg_basebackup -R), started.
     * {@code synchronous}: from then on the primary's commits wait for this standby's confirmation
     * (synchronous_standby_names = '*', set only now: before a standby streams, every commit would
     * wait forever), as a highly available deployment runs it, so what the primary acknowledged
     * survives its death. The standby asks no standby of its own once promoted, or its commits
     * would wait forever too: what Patroni does when no standby is left.
     */
    public static StandalonePostgres standbyOf(StandalonePostgres primary, Path dir, String name, boolean synchronous)
            throws IOException, InterruptedException {
        Path data = prepare(dir, name);
        run(List.of(BIN.resolve("pg_basebackup").toString(), "-h", "127.0.0.1", "-p", Integer.toString(primary.port),
                "-U", "postgres", "-D", data.toString(), "-R", "-X", "stream", "-c", "fast"), dir.resolve(name + "-basebackup.log"));
        int port = freePort();
        Files.writeString(data.resolve("postgresql.conf"), String.join("\n",
                "port = " + port,
                "unix_socket_directories = '" + data + "'",
                "synchronous_standby_names = ''",
                ""), StandardOpenOption.APPEND);
        StandalonePostgres pg = new StandalonePostgres(data, port);
        pg.start();
        if (synchronous) {
            primary.execute("ALTER SYSTEM SET synchronous_standby_names = '*'", "SELECT pg_reload_conf()");
            try {
                Await.until("the standby " + name + " streaming synchronously", Duration.ofSeconds(30), () ->
                        "sync".equals(primary.query("SELECT string_agg(sync_state, ',') FROM pg_stat_replication")) ? true : null);
            } catch (AssertionError e) {
                throw new IllegalStateException(e.getMessage() + ": " + pg.log(), e);
            }
        }
        return pg;
    }

    /** Runs {@code statements} on this server's postgres database, as the superuser. */
    public void execute(String... statements) {
        try (Connection c = TestDatabase.dataSource(jdbcUrl("postgres"), "postgres", "").getConnection();
             Statement st = c.createStatement()) {
            for (String sql : statements) {
                st.execute(sql);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("on " + hostPort() + ": " + e.getMessage(), e);
        }
    }

    /** The first column of the first row of {@code sql} on this server's postgres database. */
    public String query(String sql) {
        try (Connection c = TestDatabase.dataSource(jdbcUrl("postgres"), "postgres", "").getConnection();
             Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        } catch (SQLException e) {
            throw new IllegalStateException("on " + hostPort() + ": " + e.getMessage(), e);
        }
    }

    public int port() {
        return port;
    }

    /** {@code host:port}, for a multi-host JDBC URL. */
    public String hostPort() {
        return "127.0.0.1:" + port;
    }

    /** A JDBC URL of {@code database} on this server alone. */
    public String jdbcUrl(String database) {
        return "jdbc:postgresql://" + hostPort() + "/" + database;
    }

    /** The server dies as in a crash (pg_ctl stop -m immediate): no checkpoint, connections cut. */
    public void stopImmediately() throws IOException, InterruptedException {
        pgCtl("-m", "immediate", "-w", "stop");
    }

    /** A standby becomes a primary (pg_ctl promote, waiting until it takes writes). */
    public void promote() throws IOException, InterruptedException {
        pgCtl("-w", "-t", "60", "promote");
    }

    private void start() throws IOException, InterruptedException {
        pgCtl("-l", data.resolveSibling(data.getFileName() + "-server.log").toString(), "-w", "-t", "60", "start");
    }

    private void pgCtl(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(BIN.resolve("pg_ctl").toString(), "-D", data.toString()));
        command.addAll(List.of(args));
        run(command, data.resolveSibling(data.getFileName() + "-pg_ctl.log"));
    }

    /** The server's log so far, for a failure's message. */
    public String log() throws IOException {
        Path log = data.resolveSibling(data.getFileName() + "-server.log");
        return Files.exists(log) ? Files.readString(log) : "";
    }

    @Override
    public void close() throws IOException, InterruptedException {
        if (Files.exists(data.resolve("postmaster.pid"))) {
            stopImmediately();
        }
    }

    private static void requireBinaries() {
        Requirements.require("tests that need a PostgreSQL server of their own",
                Files.isExecutable(BIN.resolve("postgres")) && Files.isExecutable(BIN.resolve("pg_basebackup"))
                        ? null : "no PostgreSQL 15 in " + BIN + " (apt-get install postgresql-15)");
        if (asRoot()) {
            Requirements.require("tests that need a PostgreSQL server of their own",
                    Files.isExecutable(Path.of("/usr/sbin/runuser")) || Files.isExecutable(Path.of("/sbin/runuser"))
                            ? null : "running as root needs runuser to start PostgreSQL as the postgres user");
        }
    }

    /** An empty data directory the server's user owns, mode 0700 as PostgreSQL requires. */
    private static Path prepare(Path dir, String name) throws IOException, InterruptedException {
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path data = Files.createDirectory(dir.resolve(name));
        Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwx------"));
        if (asRoot()) {
            run(List.of("chown", "postgres:", dir.toString(), data.toString()), null);
        }
        return data;
    }

    private static boolean asRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    private static void run(List<String> command, Path log) throws IOException, InterruptedException {
        List<String> full = new ArrayList<>();
        if (asRoot() && !command.get(0).equals("chown")) {
            full.addAll(List.of("runuser", "-u", "postgres", "--"));
        }
        full.addAll(command);
        Process p = new ProcessBuilder(full).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(90, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(String.join(" ", command) + " did not finish in 90 s");
        }
        String text = new String(out, StandardCharsets.UTF_8);
        if (log != null && Files.isWritable(log.getParent())) {
            Files.writeString(log, text, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed (exit " + p.exitValue() + "): " + text);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
