package io.outrun.core.store;

import io.outrun.core.config.ConfigException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Multi-host URLs (issue 43): only a primary is used, a promoted standby is found at once, and a standby-only URL is refused. */
class DatabaseHostsTest {

    @Test
    void oneHostIsLeftAsWritten() {
        DatabaseConfig db = new DatabaseConfig("jdbc:postgresql://db:5432/outrun", "outrun", "");
        assertThat(db.url()).isEqualTo("jdbc:postgresql://db:5432/outrun");
        assertThat(db.directUrl()).isEqualTo(db.url());
        assertThat(DatabaseHosts.of(db.url()).several()).isFalse();
        assertThat(DatabaseHosts.of("jdbc:postgresql:outrun").hosts()).containsExactly("localhost");
    }

    @Test
    void severalHostsGetAPrimaryAndAShortRecheck() {
        DatabaseConfig db = new DatabaseConfig("jdbc:postgresql://h1:5432,h2:5433/outrun?sslmode=disable", "outrun", "");
        assertThat(db.url()).isEqualTo("jdbc:postgresql://h1:5432,h2:5433/outrun?sslmode=disable"
                + "&targetServerType=primary&hostRecheckSeconds=1");
        // The pooler check compares the two URLs: the same input stays the same URL.
        assertThat(db.directUrl()).isEqualTo(db.url());
        DatabaseHosts hosts = DatabaseHosts.of(db.url());
        assertThat(hosts.hosts()).containsExactly("h1:5432", "h2:5433");
        assertThat(hosts.unreachable()).isEqualTo("no primary answers among h1:5432, h2:5433 (failing over?)");
    }

    @Test
    void whatTheUrlSaysWins() {
        String url = "jdbc:postgresql://h1,h2/outrun?targetServerType=master&hostRecheckSeconds=5";
        assertThat(new DatabaseConfig(url, "outrun", "").url()).isEqualTo(url);
    }

    @Test
    void aStandbyIsRefused() {
        assertThatThrownBy(() -> new DatabaseConfig("jdbc:postgresql://h1,h2/outrun?targetServerType=preferSecondary", "outrun", ""))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("--db-url names several hosts")
                .hasMessageContaining("prefersecondary");
        assertThatThrownBy(() -> new DatabaseConfig("jdbc:postgresql://p/outrun", "jdbc:postgresql://h1,h2/outrun?targetServerType=any",
                "outrun", "", 6)).isInstanceOf(ConfigException.class).hasMessageContaining("--db-direct-url");
    }
}
