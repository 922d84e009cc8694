package io.outrun.testing;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A real PostgreSQL for tests: one embedded server per test JVM (started on first use, stopped
 * at exit), and a fresh, empty database per call of {@link #fresh}, so tests never see each
 * other's rows.
 *
 * <p>The kit knows no product class, so a caller says what it wants the database as, usually
 * {@code TestDatabase.migrated(DatabaseConfig::new)}: any constructor or method that takes
 * (JDBC URL, user, password).
 */
public final class TestDatabase {

    /** What a test database is handed back as: {@code DatabaseConfig::new}, {@link Rows#on(String, String, String)}, … */
    @FunctionalInterface
    public interface As<T> {
        T of(String url, String user, String password);
    }

    private static final AtomicInteger COUNTER = new AtomicInteger();
    private static EmbeddedPostgres server;

    private TestDatabase() {
    }

    private static synchronized EmbeddedPostgres server() {
        if (server == null) {
            try {
                server = EmbeddedPostgres.builder()
                        .setServerConfig("max_connections", "300")
                        .setServerConfig("fsync", "off")
                        .start();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot start the embedded PostgreSQL", e);
            }
            EmbeddedPostgres started = server;
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    started.close();
                } catch (IOException ignored) {
                    // The JVM is exiting anyway.
                }
            }));
        }
        return server;
    }

    /** A new empty database on the shared server; nothing migrated yet. */
    public static <T> T fresh(As<T> as) {
        return create(null, as);
    }

    /**
     * A fresh migrated database whose files live in {@code directory} (a tablespace there), for a
     * test that must fill the database's disk without filling the shared server's: its WAL and
     * catalogs stay where they were. The directory is handed to the server's own user.
     */
    public static <T> T migratedIn(Path directory, As<T> as) {
        EmbeddedPostgres pg = server();
        String tablespace = "ts" + ProcessHandle.current().pid() + "_" + COUNTER.incrementAndGet();
        try (Connection c = pg.getPostgresDatabase().getConnection(); Statement st = c.createStatement()) {
            try (var rs = st.executeQuery("SHOW data_directory")) {
                rs.next();
                Files.setOwner(directory, Files.getOwner(Path.of(rs.getString(1))));
            }
            st.execute("CREATE TABLESPACE " + tablespace + " LOCATION '" + directory.toAbsolutePath() + "'");
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create tablespace in " + directory, e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return migrate(create(tablespace, (url, user, password) -> new String[] {url, user, password}), as);
    }

    /** Drops what {@link #migratedIn} made, once the test's pools are closed. */
    public static void drop(String url) {
        String name = url.substring(url.lastIndexOf('/') + 1).replaceAll("\\?.*", "");
        try (Connection c = server().getPostgresDatabase().getConnection(); Statement st = c.createStatement()) {
            String tablespace = null;
            try (var rs = st.executeQuery("SELECT t.spcname FROM pg_database d JOIN pg_tablespace t"
                    + " ON t.oid = d.dattablespace WHERE d.datname = '" + name + "' AND t.spcname LIKE 'ts%'")) {
                if (rs.next()) {
                    tablespace = rs.getString(1);
                }
            }
            st.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
            if (tablespace != null) {
                st.execute("DROP TABLESPACE " + tablespace);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("cannot drop test database " + name, e);
        }
    }

    private static <T> T create(String tablespace, As<T> as) {
        EmbeddedPostgres pg = server();
        String name = "t" + ProcessHandle.current().pid() + "_" + COUNTER.incrementAndGet();
        try (Connection c = pg.getPostgresDatabase().getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE DATABASE " + name + (tablespace == null ? "" : " TABLESPACE " + tablespace));
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create test database " + name, e);
        }
        return as.of(pg.getJdbcUrl("postgres", name), "postgres", "");
    }

    /**
     * A fresh database with Outrun's migrations applied, as a node applies them
     * ({@code io.outrun.core.store.Database.migrate}: same scripts, history table and baseline;
     * {@code TestDatabaseIT} in the api module checks that a node finds nothing left to do).
     */
    public static <T> T migrated(As<T> as) {
        return migrate(fresh((url, user, password) -> new String[] {url, user, password}), as);
    }

    private static <T> T migrate(String[] coordinates, As<T> as) {
        Flyway.configure()
                .dataSource(coordinates[0], coordinates[1], coordinates[2])
                .locations("classpath:db/migration")
                .table("outrun_schema_history")
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .load()
                .migrate();
        return as.of(coordinates[0], coordinates[1], coordinates[2]);
    }

    /** A data source that opens one connection per call, for a test's own statements. */
    public static DataSource dataSource(String url, String user, String password) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(url);
        ds.setUser(user);
        ds.setPassword(password);
        return ds;
    }
}
