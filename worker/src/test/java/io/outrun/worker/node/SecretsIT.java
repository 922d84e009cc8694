package io.outrun.worker.node;

import io.outrun.testing.Requirements;
import io.outrun.worker.testing.DevProcess;
import io.outrun.worker.testing.WorkerProcess;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 27: a secret set over the API reaches the run as env, is {@code [secret:NAME]} in its
 * stored output (even printed in two pieces across an output flush), and is in no answer, log
 * line, dashboard job, nor in the clear in a {@code pg_dumpall} of the database; another owner
 * can neither list nor use it. Against {@code outrun dev}: its API, worker and PostgreSQL, with
 * the key it made in its data dir.
 */
class SecretsIT {

    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void aSecretReachesItsRunAndNothingElse(@TempDir Path dir) throws Exception {
        Path pgDumpAll = Requirements.binary("pg_dumpall");
        int dashboardPort;
        try (ServerSocket s = new ServerSocket(0)) {
            dashboardPort = s.getLocalPort();
        }
        byte[] random = new byte[18];
        new SecureRandom().nextBytes(random);
        String value = "npm_" + Base64.getUrlEncoder().withoutPadding().encodeToString(random);
        // One slot: a run can be held queued behind another while its secret is deleted.
        try (DevProcess dev = DevProcess.start(dir, "--dashboard-port", String.valueOf(dashboardPort), "--slots", "1")) {
            assertThat(Files.readString(dir.resolve("secrets-key")).strip()).hasSize(44);
            String base = dev.api().toString();
            String alice = Files.readString(dir.resolve("dev-token")).strip();
            List<String> answers = new ArrayList<>();

            HttpResponse<String> created = send(base, "PUT", "/v1/secrets/NPM_TOKEN", alice, "{\"value\": \"" + value + "\"}");
            assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
            assertThat(created.body()).contains("\"name\":\"NPM_TOKEN\"", "createdAt");
            HttpResponse<String> updated = send(base, "PUT", "/v1/secrets/NPM_TOKEN", alice, "{\"value\": \"" + value + "\"}");
            assertThat(updated.statusCode()).isEqualTo(200);
            HttpResponse<String> listed = send(base, "GET", "/v1/secrets", alice, null);
            assertThat(listed.body()).contains("\"name\":\"NPM_TOKEN\"");
            answers.addAll(List.of(created.body(), updated.body(), listed.body()));
            // Bad input: each a 400 naming what is wrong, never echoing the value.
            HttpResponse<String> tooShort = send(base, "PUT", "/v1/secrets/SHORT", alice, "{\"value\": \"abc\"}");
            assertThat(tooShort.statusCode()).isEqualTo(400);
            assertThat(tooShort.body()).contains("invalid_request", "at least 4 bytes");
            assertThat(send(base, "PUT", "/v1/secrets/PATH", alice, "{\"value\": \"abcdefgh\"}").body()).contains("sets PATH itself");
            assertThat(send(base, "PUT", "/v1/secrets/9BAD", alice, "{\"value\": \"abcdefgh\"}").statusCode()).isEqualTo(400);
            assertThat(send(base, "PUT", "/v1/secrets/SHELLOPTS", alice, "{\"value\": \"abcdefgh\"}").statusCode()).isEqualTo(400);
            assertThat(send(base, "PUT", "/v1/secrets/_outrun_d", alice, "{\"value\": \"abcdefgh\"}").statusCode()).isEqualTo(400);
            assertThat(send(base, "PUT", "/v1/secrets/BIG", alice, "{\"value\": \"" + "x".repeat(16 * 1024 + 1) + "\"}")
                    .body()).contains("at most 16384 bytes");

            // The run gets the value (its hash proves it without printing it), and prints it
            // whole, on stderr, and in two pieces across an output flush.
            String command = "echo \"token=$NPM_TOKEN\"; printf %s \"$NPM_TOKEN\" | sha256sum | cut -c1-64;"
                    + " echo \"$NPM_TOKEN\" >&2; printf %s \"${NPM_TOKEN:0:9}\"; sleep 1.6; printf '%s\\n' \"${NPM_TOKEN:9}\"";
            HttpResponse<String> ran = send(base, "POST", "/v1/executions", alice,
                    "{\"command\": " + json(command) + ", \"secrets\": [\"NPM_TOKEN\"], \"waitMs\": 30000}");
            assertThat(ran.statusCode()).as(ran.body()).isEqualTo(200);
            assertThat(ran.body()).contains("\"status\":\"succeeded\"");
            String id = field(ran.body(), "executionId");
            String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(value.getBytes(StandardCharsets.UTF_8)));
            HttpResponse<String> got = send(base, "GET", "/v1/executions/" + id, alice, null);
            assertThat(got.body()).contains("token=[secret:NPM_TOKEN]\\n" + sha + "\\n[secret:NPM_TOKEN]\\n")
                    .contains("\"stderr\":{\"text\":\"[secret:NPM_TOKEN]\\n");
            answers.addAll(List.of(ran.body(), got.body(),
                    send(base, "GET", "/v1/executions/" + id + "/output", alice, null).body(),
                    send(base, "GET", "/v1/executions", alice, null).body()));

            // Refused at submit: an unknown name, a name also in env.
            HttpResponse<String> unknown = send(base, "POST", "/v1/executions", alice,
                    "{\"command\": \"true\", \"secrets\": [\"NPM_TOKEN\", \"NOPE\"]}");
            assertThat(unknown.statusCode()).isEqualTo(400);
            assertThat(unknown.body()).contains("secret_not_found", "NOPE").doesNotContain("NPM_TOKEN,");
            HttpResponse<String> both = send(base, "POST", "/v1/executions", alice,
                    "{\"command\": \"true\", \"secrets\": [\"NPM_TOKEN\"], \"env\": {\"NPM_TOKEN\": \"x\"}}");
            assertThat(both.statusCode()).isEqualTo(400);

            // Another owner neither lists, uses nor deletes it.
            String bob = token(dev, dir, "bob");
            assertThat(send(base, "GET", "/v1/secrets", bob, null).body()).isEqualTo("{\"secrets\":[]}");
            HttpResponse<String> bobRun = send(base, "POST", "/v1/executions", bob,
                    "{\"command\": \"echo $NPM_TOKEN\", \"secrets\": [\"NPM_TOKEN\"]}");
            assertThat(bobRun.statusCode()).isEqualTo(400);
            assertThat(bobRun.body()).contains("secret_not_found");
            assertThat(send(base, "DELETE", "/v1/secrets/NPM_TOKEN", bob, null).statusCode()).isEqualTo(404);

            // The CLI: set from stdin (the newline echo adds is dropped), run --secret, ls, rm.
            String carol = token(dev, dir, "carol");
            String carolValue = value + "-carol";
            assertThat(cli(base, carol, carolValue + "\n", "secret", "set", "DEPLOY_KEY")).contains("secret DEPLOY_KEY set");
            assertThat(cli(base, carol, "", "secret", "ls")).contains("DEPLOY_KEY  updated");
            String carolSha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(carolValue.getBytes(StandardCharsets.UTF_8)));
            assertThat(cli(base, carol, "", "run", "--wait", "--secret", "DEPLOY_KEY", "--",
                    "printf %s \"$DEPLOY_KEY\" | sha256sum | cut -c1-64; echo \"k=$DEPLOY_KEY\""))
                    .contains(carolSha, "k=[secret:DEPLOY_KEY]").doesNotContain(carolValue);
            assertThat(cli(base, carol, "", "secret", "rm", "DEPLOY_KEY")).contains("secret DEPLOY_KEY removed");
            assertThat(cli(base, carol, "", "secret", "rm", "DEPLOY_KEY")).contains("secret_not_found");

            // Nowhere in the clear: answers, logs, the dashboard's jobs, a dump of the database.
            assertThat(answers).noneMatch(a -> a.contains(value));
            assertThat(dev.log()).doesNotContain(value).contains("succeeded");
            String jobs = dashboard(dashboardPort, dir);
            assertThat(jobs).contains("NPM_TOKEN").doesNotContain(value);
            String dump = pgDumpAll(pgDumpAll, dev, dir);
            assertThat(dump).contains("[secret:NPM_TOKEN]").contains("NPM_TOKEN").doesNotContain(value);

            // A repeat of an accepted submission answers it, even once its secret is gone (below).
            HttpResponse<String> keyed = send(base, "POST", "/v1/executions", alice,
                    "{\"command\": \"true\", \"secrets\": [\"NPM_TOKEN\"]}", "Idempotency-Key", "with-secret");
            assertThat(keyed.statusCode()).isEqualTo(202);

            // Deleted while a run that names it waits: that run fails secret_unavailable, naming it.
            assertThat(send(base, "POST", "/v1/executions", alice, "{\"command\": \"sleep 4\"}").statusCode()).isEqualTo(202);
            HttpResponse<String> waiting = send(base, "POST", "/v1/executions", alice,
                    "{\"command\": \"echo $NPM_TOKEN\", \"secrets\": [\"NPM_TOKEN\"]}");
            assertThat(waiting.body()).contains("\"status\":\"queued\"");
            assertThat(send(base, "DELETE", "/v1/secrets/NPM_TOKEN", alice, null).statusCode()).isEqualTo(204);
            HttpResponse<String> failed = send(base, "GET", "/v1/executions/" + field(waiting.body(), "executionId")
                    + "?waitMs=30000", alice, null);
            assertThat(failed.body()).contains("\"status\":\"failed\"", "secret_unavailable", "secret NPM_TOKEN the execution names no longer exists")
                    .doesNotContain(value);
            assertThat(send(base, "GET", "/v1/secrets", alice, null).body()).isEqualTo("{\"secrets\":[]}");
            HttpResponse<String> replayed = send(base, "POST", "/v1/executions", alice,
                    "{\"command\": \"true\", \"secrets\": [\"NPM_TOKEN\"]}", "Idempotency-Key", "with-secret");
            assertThat(replayed.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(field(replayed.body(), "executionId")).isEqualTo(field(keyed.body(), "executionId"));
            assertThat(send(base, "POST", "/v1/executions", alice,
                    "{\"command\": \"true\", \"secrets\": [\"NPM_TOKEN\"]}").statusCode()).isEqualTo(400);
        }
    }

    private HttpResponse<String> send(String base, String method, String path, String token, String body,
                                      String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(60))
                .header("Authorization", "Bearer " + token);
        if (headers.length > 0) {
            b.headers(headers);
        }
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** {@code outrun ARGS} against the dev API as {@code token}, {@code stdin} fed to it; stdout and stderr. */
    private static String cli(String api, String token, String stdin, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", WorkerProcess.jar().toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("OUTRUN_API", api);
        pb.environment().put("OUTRUN_TOKEN", token);
        Process p = pb.start();
        try (var in = p.getOutputStream()) {
            in.write(stdin.getBytes(StandardCharsets.UTF_8));
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(90, TimeUnit.SECONDS)).isTrue();
        return out;
    }

    private String dashboard(int port, Path dir) throws Exception {
        String password = Files.readString(dir.resolve("dashboard-password")).strip();
        String auth = "Basic " + Base64.getEncoder().encodeToString(("dev:" + password).getBytes(StandardCharsets.UTF_8));
        StringBuilder all = new StringBuilder();
        for (String state : List.of("SUCCEEDED", "FAILED", "ENQUEUED", "PROCESSING")) {
            HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/api/jobs?state=" + state
                    + "&offset=0&limit=50")).header("Authorization", auth).build();
            all.append(http.send(r, HttpResponse.BodyHandlers.ofString()).body());
        }
        return all.toString();
    }

    private static String token(DevProcess dev, Path dir, String owner) throws Exception {
        String out = WorkerProcess.cli("token", "create", "--owner", owner, "--db-url", dev.jdbcUrl(), "--db-user", "postgres",
                "--db-password", Files.readString(dir.resolve("db-password")).strip());
        List<String> lines = out.lines().toList();
        return lines.get(lines.size() - 1).strip();
    }

    private static String pgDumpAll(Path pgDumpAll, DevProcess dev, Path dir) throws Exception {
        Matcher m = Pattern.compile("jdbc:postgresql://([^:/]+):(\\d+)/").matcher(dev.jdbcUrl());
        assertThat(m.find()).as(dev.jdbcUrl()).isTrue();
        ProcessBuilder pb = new ProcessBuilder(pgDumpAll.toString(), "-h", m.group(1), "-p", m.group(2), "-U", "postgres")
                .redirectErrorStream(true);
        pb.environment().put("PGPASSWORD", Files.readString(dir.resolve("db-password")).strip());
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String dump = new String(out, StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(dump.length() > 2000 ? dump.substring(0, 2000) : dump).isZero();
        return dump;
    }

    private static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":\"([^\"]+)\"").matcher(json);
        assertThat(m.find()).as(json).isTrue();
        return m.group(1);
    }

    private static String json(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
