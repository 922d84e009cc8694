package io.outrun.api.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The API node's database refuses connections (it is the node's only state): health says so
 * quickly, every call answers 503 {@code database_unavailable} with Retry-After instead of a
 * 500, and when the database is back the node serves again with nothing lost.
 */
class DatabaseOutageIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SUBMIT = "{\"command\":\"echo after\"}";

    @Test
    void answers503WhileTheDatabaseIsDownAndRecoversWithNothingLost() throws Exception {
        try (ApiHarness api = ApiHarness.start()) {
            HttpResponse<String> accepted = api.send("POST", "/v1/executions", api.aliceToken, "{\"command\":\"echo before\"}");
            assertThat(accepted.statusCode()).isEqualTo(202);
            String id = json(accepted).path("executionId").asText();

            DatabaseConfig db = api.core().config();
            setConnectionsAllowed(db, false);
            try {
                long start = System.nanoTime();
                HttpResponse<String> health = api.send("GET", "/health", null, null);
                long healthMs = (System.nanoTime() - start) / 1_000_000;
                assertUnavailable(health);
                assertThat(healthMs).as("health answers within its bound (3 s), not the pool's 10 s").isLessThan(6_000);

                assertUnavailable(api.send("POST", "/v1/executions", api.aliceToken, SUBMIT));
                assertUnavailable(api.send("GET", "/v1/executions/" + id, api.aliceToken, null));
            } finally {
                setConnectionsAllowed(db, true);
            }

            Await.until("health back to 200", Duration.ofSeconds(30), () -> api.send("GET", "/health", null, null).statusCode() == 200);
            HttpResponse<String> before = api.send("GET", "/v1/executions/" + id, api.aliceToken, null);
            assertThat(before.statusCode()).isEqualTo(200);
            assertThat(json(before).path("status").asText()).isEqualTo("queued");
            assertThat(api.send("POST", "/v1/executions", api.aliceToken, SUBMIT).statusCode()).isEqualTo(202);
        }
    }

    /**
     * A database that takes no writes (a standby, or default_transaction_read_only): health says
     * database_read_only, and a submit is answered the same way, never 500.
     */
    @Test
    void aReadOnlyDatabaseIsNamedAsSuchByHealthAndSubmits() throws Exception {
        try (ApiHarness api = ApiHarness.start()) {
            DatabaseConfig db = api.core().config();
            setReadOnly(db, true);
            try {
                // The pool's sessions were ended: the first call may meet a dead one (database_unavailable).
                for (String[] call : new String[][] {{"GET", "/health", null}, {"POST", "/v1/executions", SUBMIT}}) {
                    HttpResponse<String> r = Await.until(call[1] + " answered database_read_only", Duration.ofSeconds(20), () -> {
                        HttpResponse<String> a = api.send(call[0], call[1], api.aliceToken, call[2]);
                        return a.body().contains("database_unavailable") ? null : a;
                    });
                    assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
                    assertThat(r.headers().firstValue("Retry-After")).hasValue("30");
                    assertThat(json(r).path("error").path("code").asText()).as(r.body()).isEqualTo("database_read_only");
                }
            } finally {
                setReadOnly(db, false);
            }
            Await.until("health back to 200", Duration.ofSeconds(30), () -> api.send("GET", "/health", null, null).statusCode() == 200);
            assertThat(api.send("POST", "/v1/executions", api.aliceToken, SUBMIT).statusCode()).isEqualTo(202);
        }
    }

    /** Sets the database read-only (or not) and ends its sessions, so the pool's new ones take the setting. */
    private static void setReadOnly(DatabaseConfig db, boolean readOnly) throws Exception {
        alterDatabase(db, "SET default_transaction_read_only = " + (readOnly ? "on" : "off"), true);
    }

    private static void assertUnavailable(HttpResponse<String> r) throws Exception {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
        assertThat(r.headers().firstValue("Retry-After")).hasValue("5");
        JsonNode body = json(r);
        assertThat(body.path("error").path("code").asText()).isEqualTo("database_unavailable");
        assertThat(body.path("guidance").asText()).contains("Retry");
        assertThat(r.body()).doesNotContain("Exception").doesNotContain("\tat ");
    }

    /** Closes the node's database to new connections and ends the open ones (or opens it again). */
    private static void setConnectionsAllowed(DatabaseConfig db, boolean allowed) throws Exception {
        alterDatabase(db, "ALLOW_CONNECTIONS " + allowed, !allowed);
    }

    /** ALTER DATABASE (the node's) {@code change}, from the server's own database; then ends its sessions if asked. */
    private static void alterDatabase(DatabaseConfig db, String change, boolean endSessions) throws Exception {
        Matcher m = Pattern.compile("(jdbc:postgresql://[^/]+/)([^?]+)(.*)").matcher(db.url());
        assertThat(m.matches()).as(db.url()).isTrue();
        String name = m.group(2);
        try (Connection c = DriverManager.getConnection(m.group(1) + "postgres" + m.group(3), db.user(), db.password());
             Statement st = c.createStatement()) {
            st.execute("ALTER DATABASE " + name + " " + change);
            if (endSessions) {
                st.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'");
            }
        }
    }

    private static JsonNode json(HttpResponse<String> r) throws Exception {
        return JSON.readTree(r.body());
    }
}
