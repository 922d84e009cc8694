package io.outrun.testing;

import io.outrun.store.Database;
import io.outrun.store.DatabaseConfig;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real PostgreSQL for tests: one embedded server per test JVM (started on first use, stopped
 * at exit), and a fresh, empty database per call of {@link #fresh()}, so tests never see each
 * other's rows.
 */
public final class TestDatabase {

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
    public static DatabaseConfig fresh() {
        EmbeddedPostgres pg = server();
        String name = "t" + ProcessHandle.current().pid() + "_" + COUNTER.incrementAndGet();
        try (Connection c = pg.getPostgresDatabase().getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE DATABASE " + name);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create test database " + name, e);
        }
        return new DatabaseConfig(pg.getJdbcUrl("postgres", name), "postgres", "");
    }

    /** A fresh database with Outrun's migrations applied. */
    public static DatabaseConfig migrated() {
        DatabaseConfig config = fresh();
        try (var pool = Database.pool(config, "migrate")) {
            Database.migrate(pool);
        }
        return config;
    }
}
