package io.outrun.testing;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
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
        EmbeddedPostgres pg = server();
        String name = "t" + ProcessHandle.current().pid() + "_" + COUNTER.incrementAndGet();
        try (Connection c = pg.getPostgresDatabase().getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE DATABASE " + name);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create test database " + name, e);
        }
        return as.of(pg.getJdbcUrl("postgres", name), "postgres", "");
    }

    /**
     * A fresh database with Outrun's migrations applied, as a node applies them
     * ({@code io.outrun.store.Database.migrate}: same scripts, history table and baseline;
     * {@code TestDatabaseIT} in the api module checks that a node finds nothing left to do).
     */
    public static <T> T migrated(As<T> as) {
        String[] coordinates = fresh((url, user, password) -> new String[] {url, user, password});
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
