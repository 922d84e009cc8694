package io.outrun.store;

/**
 * How a node reaches PostgreSQL. Validated once at start; a bad value fails fast and names the
 * option.
 *
 * @param url      JDBC URL, {@code jdbc:postgresql://host:port/db} ({@code --db-url}, {@code OUTRUN_DB_URL})
 * @param user     database user ({@code --db-user}, {@code OUTRUN_DB_USER})
 * @param password database password ({@code --db-password}, {@code OUTRUN_DB_PASSWORD}); may be empty
 * @param poolSize connections per node; default 6: the fleet shares one database, so keep it small
 */
public record DatabaseConfig(String url, String user, String password, int poolSize) {

    public static final int DEFAULT_POOL_SIZE = 6;

    public DatabaseConfig {
        if (url == null || url.isBlank()) {
            throw new ConfigException("--db-url (or OUTRUN_DB_URL) is required, e.g. jdbc:postgresql://localhost:5432/outrun");
        }
        if (!url.startsWith("jdbc:postgresql:")) {
            throw new ConfigException("--db-url must be a PostgreSQL JDBC URL starting with jdbc:postgresql:, got: " + url);
        }
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

    public DatabaseConfig(String url, String user, String password) {
        this(url, user, password, DEFAULT_POOL_SIZE);
    }

    @Override
    public String toString() {
        return "DatabaseConfig[url=" + url + ", user=" + user + ", poolSize=" + poolSize + "]";
    }
}
