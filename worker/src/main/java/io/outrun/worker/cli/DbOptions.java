package io.outrun.worker.cli;

import io.outrun.core.store.DatabaseConfig;
import picocli.CommandLine.Option;

/** Database options shared by every role; each defaults to its environment variable (picocli reads it). */
public final class DbOptions {

    @Option(names = "--db-url", defaultValue = "${env:OUTRUN_DB_URL}", description = "PostgreSQL JDBC URL (env OUTRUN_DB_URL), e.g. jdbc:postgresql://localhost:5432/outrun")
    String url;

    @Option(names = "--db-user", defaultValue = "${env:OUTRUN_DB_USER}", description = "Database user (env OUTRUN_DB_USER)")
    String user;

    @Option(names = "--db-password", defaultValue = "${env:OUTRUN_DB_PASSWORD}", description = "Database password (env OUTRUN_DB_PASSWORD)")
    String password;

    @Option(names = "--db-direct-url", defaultValue = "${env:OUTRUN_DB_DIRECT_URL}", description = "JDBC URL that reaches PostgreSQL itself, not a pooler (env OUTRUN_DB_DIRECT_URL;"
            + " default: --db-url). Behind PgBouncer in transaction mode, the node's one LISTEN/heartbeat connection and"
            + " schema migrations need it.")
    String directUrl;

    @Option(names = "--db-pool-size", description = "Pooled connections per node (default: 3 for a worker, which also"
            + " holds one direct connection; 6 for an API node)")
    Integer poolSize;

    /** Validated settings; throws a ConfigException naming the missing or bad option. */
    public DatabaseConfig toConfig() {
        return toConfig(DatabaseConfig.DEFAULT_POOL_SIZE);
    }

    /** As {@link #toConfig()}, with the pool size of this node's role unless one was given. */
    public DatabaseConfig toConfig(int rolePoolSize) {
        return new DatabaseConfig(url, directUrl, user, password, poolSize != null ? poolSize : rolePoolSize);
    }
}
