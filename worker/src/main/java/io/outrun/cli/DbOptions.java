package io.outrun.cli;

import io.outrun.store.DatabaseConfig;
import picocli.CommandLine.Option;

/** Database options shared by every role; each falls back to its environment variable. */
public final class DbOptions {

    @Option(names = "--db-url", description = "PostgreSQL JDBC URL (env OUTRUN_DB_URL), e.g. jdbc:postgresql://localhost:5432/outrun")
    String url;

    @Option(names = "--db-user", description = "Database user (env OUTRUN_DB_USER)")
    String user;

    @Option(names = "--db-password", description = "Database password (env OUTRUN_DB_PASSWORD)")
    String password;

    @Option(names = "--db-pool-size", description = "Connections per node (default ${DEFAULT-VALUE})", defaultValue = "6")
    int poolSize;

    /** Validated settings; throws a ConfigException naming the missing or bad option. */
    public DatabaseConfig toConfig() {
        return new DatabaseConfig(
                url != null ? url : System.getenv("OUTRUN_DB_URL"),
                user != null ? user : System.getenv("OUTRUN_DB_USER"),
                password != null ? password : System.getenv("OUTRUN_DB_PASSWORD"),
                poolSize);
    }
}
