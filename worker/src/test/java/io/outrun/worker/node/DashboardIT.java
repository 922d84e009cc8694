package io.outrun.worker.node;

import io.outrun.worker.cli.Outrun;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.DevProcess;
import io.outrun.worker.testing.WorkerProcess;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Base64;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/** What an admin sees on a JobRunr dashboard (a worker's, dev's): behind basic auth, jobs named by owner and command. */
class DashboardIT {

    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void dashboardNeedsItsPasswordAndShowsOwnerAndCommand() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        try (Core api = Core.open(db, "api");
             WorkerProcess w = WorkerProcess.startWith(db, "dash", 1, "process", "--dashboard-port", String.valueOf(port),
                     "--dashboard-user", "admin", "--dashboard-password", "s3cret")) {
            UUID id = api.service().submit(Submission.of("alice", "echo shown on the dashboard")).execution().id();
            Await.until("done", Duration.ofSeconds(20), () -> api.submissions().find(id).orElseThrow().status().isTerminal());
            String base = "http://127.0.0.1:" + port;

            assertThat(get(base + "/api/servers", null).statusCode()).isEqualTo(401);
            assertThat(get(base + "/api/servers", "admin:wrong").statusCode()).isEqualTo(401);
            HttpResponse<String> servers = get(base + "/api/servers", "admin:s3cret");
            assertThat(servers.statusCode()).isEqualTo(200);
            assertThat(servers.body()).contains("\"name\":\"dash\"");

            String jobs = Await.until("job listed", Duration.ofSeconds(10), () -> {
                String body = get(base + "/api/jobs?state=SUCCEEDED&offset=0&limit=20&order=updatedAt:DESC",
                        "admin:s3cret").body();
                return body.contains("[alice] echo shown on the dashboard") ? body : null;
            });
            assertThat(jobs).contains("owner:alice");
        }
    }

    @Test
    void devDashboardNeedsThePasswordItWroteToTheDataDir(@TempDir Path dir) throws Exception {
        int port = freePort();
        try (DevProcess dev = DevProcess.start(dir, "--dashboard-port", String.valueOf(port))) {
            Path file = dir.resolve("dashboard-password");
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
            String password = Files.readString(file).strip();
            assertThat(password).hasSizeGreaterThanOrEqualTo(16);
            assertThat(dev.log()).contains("user dev, password " + password);
            String base = "http://127.0.0.1:" + port;
            assertThat(get(base + "/api/servers", null).statusCode()).isEqualTo(401);
            assertThat(get(base + "/api/jobs?state=SUCCEEDED&offset=0&limit=20", null).statusCode()).isEqualTo(401);
            assertThat(get(base + "/dashboard/overview", null).statusCode()).isEqualTo(401);
            assertThat(get(base + "/api/servers", "dev:wrong").statusCode()).isEqualTo(401);
            assertThat(get(base + "/api/servers", "dev:" + password).statusCode()).isEqualTo(200);
        }
    }

    @Test
    void workerRefusesADashboardWithoutCredentialsUnlessToldItIsOpenOnPurpose() {
        StringWriter err = new StringWriter();
        picocli.CommandLine cl = Outrun.commandLine();
        cl.setOut(new PrintWriter(new StringWriter(), true));
        cl.setErr(new PrintWriter(err, true));
        int code = cl.execute("worker", "--db-url", "jdbc:postgresql://127.0.0.1:1/none", "--sandbox", "process",
                "--dashboard-port", "8123");
        assertThat(code).isEqualTo(2);
        assertThat(err.toString().strip()).startsWith("outrun: configuration error: --dashboard-port 8123 needs --dashboard-user")
                .contains("--dashboard-no-auth").doesNotContain("Exception").hasLineCount(1);
    }

    @Test
    void workerServesAnOpenDashboardWhenToldSo() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        int port = freePort();
        try (WorkerProcess w = WorkerProcess.startWith(db, "dash-open", 1, "process", "--dashboard-port", String.valueOf(port),
                "--dashboard-no-auth")) {
            assertThat(get("http://127.0.0.1:" + port + "/api/servers", null).statusCode()).isEqualTo(200);
        }
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private HttpResponse<String> get(String url, String credentials) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10));
        if (credentials != null) {
            b.header("Authorization", "Basic " + Base64.getEncoder().encodeToString(credentials.getBytes(StandardCharsets.UTF_8)));
        }
        try {
            return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
