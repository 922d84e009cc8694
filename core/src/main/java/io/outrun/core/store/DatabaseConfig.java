package io.outrun.core.store;

import io.outrun.core.config.ConfigException;

/**
 * How a node reaches PostgreSQL. Validated once at start; a bad value fails fast and names the
 * option.
 *
 * @param url      JDBC URL, {@code jdbc:postgresql://host:port/db} ({@code --db-url}, {@code OUTRUN_DB_URL});
 *                 may point at PgBouncer in transaction pooling mode, or name the servers of a highly
 *                 available PostgreSQL ({@code jdbc:postgresql://h1:p1,h2:p2/db}; see {@link DatabaseHosts}),
 *                 which gets {@code targetServerType=primary} unless it says so itself
 * @param directUrl JDBC URL of PostgreSQL itself ({@code --db-direct-url}, {@code OUTRUN_DB_DIRECT_URL}), for
 *                 what needs a session: LISTEN, the heartbeat, schema migrations; defaults to {@code url}
 * @param user     database user ({@code --db-user}, {@code OUTRUN_DB_USER})
 * @param password database password ({@code --db-password}, {@code OUTRUN_DB_PASSWORD}); may be empty
 * @param poolSize pooled connections per node; the fleet shares one database, so keep it small
 *                 (a worker: 3, plus its one direct connection)
 */
public record DatabaseConfig(String url, String directUrl, String user, String password, int poolSize) {

    public static final int DEFAULT_POOL_SIZE = 6;
    public static final int WORKER_POOL_SIZE = 3;

    public DatabaseConfig {
        if (url == null || url.isBlank()) {
            throw new ConfigException("--db-url (or OUTRUN_DB_URL) is required, e.g. jdbc:postgresql://localhost:5432/outrun");
        }
        if (!url.startsWith("jdbc:postgresql:")) {
            throw new ConfigException("--db-url must be a PostgreSQL JDBC URL starting with jdbc:postgresql:, got: " + url);
        }
        if (directUrl == null || directUrl.isBlank()) {
            directUrl = url;
        } else if (!directUrl.startsWith("jdbc:postgresql:")) {
            throw new ConfigException("--db-direct-url must be a PostgreSQL JDBC URL starting with jdbc:postgresql:, got: " + directUrl);
        }
        url = primaryOnly("--db-url", url);
        directUrl = primaryOnly("--db-direct-url", directUrl);
        if (user == null || user.isBlank()) {
            throw new ConfigException("--db-user (or OUTRUN_DB_USER) is required");
        }
        if (password == null) {
            password = "";
        }
        if (poolSize < 2 || poolSize > 100) {
            throw new ConfigException("--db-pool-size must be between 2 and 100, got: " + poolSize);
        }
    }

    /** Several hosts: only the primary among them (a standby takes no writes, and a node writes everywhere). */
    private static String primaryOnly(String option, String url) {
        String target = DatabaseHosts.targetServerType(url);
        if (DatabaseHosts.of(url).several() && target != null && !target.equals("primary") && !target.equals("master")) {
            throw new ConfigException(option + " names several hosts: its targetServerType must be primary (a node"
                    + " writes, and a standby takes no writes), got: " + target);
        }
        return DatabaseHosts.primaryOnly(url);
    }

    public DatabaseConfig(String url, String user, String password) {
        this(url, null, user, password, DEFAULT_POOL_SIZE);
    }

    public DatabaseConfig(String url, String user, String password, int poolSize) {
        this(url, null, user, password, poolSize);
    }

    public DatabaseConfig withPoolSize(int size) {
        return new DatabaseConfig(url, directUrl, user, password, size);
    }

    @Override
    public String toString() {
        return "DatabaseConfig[url=" + url + (directUrl.equals(url) ? "" : ", directUrl=" + directUrl) + ", user=" + user + ", poolSize=" + poolSize + "]";
    }
}
