package io.outrun.core.store;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.postgresql.ds.PGSimpleDataSource;

/** Opens a node's small connection pool and applies Outrun's migrations. */
public final class Database {

    private Database() {
    }

    /** A HikariCP pool; closing it is the caller's business. */
    public static HikariDataSource pool(DatabaseConfig config, String name) {
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(config.url());
        hikari.setUsername(config.user());
        hikari.setPassword(config.password());
        hikari.setMaximumPoolSize(config.poolSize());
        hikari.setPoolName("outrun-" + name);
        hikari.setConnectionTimeout(10_000);
        // A fleet's idle nodes must not cost the database: no keep-alive pings, and a connection
        // idle for a while is trusted on borrow (the default re-validates one idle 0.5 s with a
        // round trip each time); a dead one fails its statement and is replaced.
        hikari.setKeepaliveTime(0);
        hikari.setMinimumIdle(Math.min(1, config.poolSize()));
        hikari.setIdleTimeout(0);
        System.setProperty("com.zaxxer.hikari.aliveBypassWindowMs", "30000");
        // Fail at start, not at the first request, when the database is unreachable.
        hikari.setInitializationFailTimeout(15_000);
        hikari.addDataSourceProperty("tcpKeepAlive", "true");
        hikari.addDataSourceProperty("ApplicationName", "outrun-" + name);
        // Bounded waits everywhere: a half-open connection fails within a minute, not TCP's 2 h.
        hikari.addDataSourceProperty("socketTimeout", "60");
        hikari.addDataSourceProperty("connectTimeout", "10");
        // READ COMMITTED whatever the database's default: the owner's running cap counts after
        // taking its lock (outrun_owner_may_run) and must see the claims that committed meanwhile;
        // under REPEATABLE READ it would count from an older snapshot and let cap + 1 run.
        hikari.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
        // Through a transaction pooler (a --db-url apart from --db-direct-url: PgBouncer), no
        // server-side prepared statements: its transaction pooling cannot carry them. Straight to
        // PostgreSQL, pgjdbc's default: a statement used 5 times on a connection is prepared
        // there, and no longer parsed and planned at every call (issue 42: planning the claim,
        // the ends and the submit's INSERT of arrays was most of PostgreSQL's CPU per execution).
        if (!config.url().equals(config.directUrl())) {
            hikari.addDataSourceProperty("prepareThreshold", "0");
        }
        // A JDBC batch of inserts goes as multi-row INSERTs: JobRunr's save of many new books
        // (NewBooks) is a few statements, not one per job. Rewritten batches report
        // SUCCESS_NO_INFO, which JobRunr's insertAll accepts.
        hikari.addDataSourceProperty("reWriteBatchedInserts", "true");
        try {
            return new HikariDataSource(hikari);
        } catch (RuntimeException e) {
            Throwable root = e;
            while (root.getCause() != null) {
                root = root.getCause();
            }
            throw new StoreException("cannot connect to PostgreSQL at " + config.url() + " as " + config.user()
                    + " (check --db-url, --db-user, --db-password): " + root.getMessage(), null);
        }
    }

    /**
     * Advisory lock key held while a node changes the schema (ours, and JobRunr's tables):
     * "outrun schema".
     */
    public static final long SCHEMA_LOCK = 0x6f75_7472_756e_5343L;

    /**
     * Applies pending migrations, under {@link #SCHEMA_LOCK}, so that nodes starting together on
     * an empty database migrate it once and the others then find nothing to do. Flyway's own lock
     * is not enough: its baseline of an empty schema races ("Unable to baseline schema history
     * table ... as it already exists, and is empty" killed one of five nodes in ConcurrentStartIT).
     */
    public static int migrate(DataSource dataSource) {
        return new AdvisoryLock(dataSource, SCHEMA_LOCK).runExclusive(() -> Flyway.configure()
                .dataSource(dataSource)
                .locations("classpath:db/migration")
                .table("outrun_schema_history")
                // JobRunr's tables may already share the schema: baseline below V1 so V1 still runs.
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .load()
                .migrate()
                .migrationsExecuted);
    }

    /** This deployment's id (one per database, made by migration V10). */
    public static String deployment(DataSource dataSource) {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT id FROM deployment")) {
            if (!rs.next()) {
                throw new StoreException("the deployment table has no row: was migration V10 applied?", null);
            }
            return rs.getString(1);
        } catch (SQLException e) {
            throw new StoreException("cannot read this deployment's id", e);
        }
    }

    /**
     * The node's one connection to PostgreSQL itself (never through a pooler), for LISTEN and the
     * heartbeat: it lives as long as the node. Every statement on it is bounded by
     * {@code timeoutMs}, on the server (statement and lock timeouts) and on the client (socket
     * timeout), so a hung database or a half-open connection fails the statement in time.
     */
    public static Connection dedicated(DatabaseConfig config, String name, long timeoutMs) throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", config.user());
        props.setProperty("password", config.password());
        props.setProperty("tcpKeepAlive", "true");
        props.setProperty("ApplicationName", "outrun-" + name);
        props.setProperty("connectTimeout", Long.toString(Math.max(1, timeoutMs / 1000)));
        props.setProperty("socketTimeout", Long.toString(Math.max(2, timeoutMs / 1000 + 2)));
        props.setProperty("options", "-c statement_timeout=" + timeoutMs + " -c lock_timeout=" + timeoutMs);
        return DriverManager.getConnection(config.directUrl(), props);
    }

    /** A data source on PostgreSQL itself, one connection per call, for what holds a session lock. */
    public static DataSource direct(DatabaseConfig config) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(config.directUrl());
        ds.setUser(config.user());
        ds.setPassword(config.password());
        ds.setApplicationName("outrun-migrate");
        return ds;
    }
}
