package io.outrun.worker.node;

import com.sun.net.httpserver.HttpServer;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 31, the worker's side: a command in the Docker sandbox (network none) reaches a stand-in
 * for Outrun's API on the host's loopback through {@code $OUTRUN_API} with its own
 * {@code $OUTRUN_API_TOKEN}, and is refused by the node's bridge without it (the stand-in sees
 * nothing of that request). Such a run takes a container of the node's warm pool, whose own API
 * directory gets the attempt's socket by a hard link, and which goes with the container; the
 * attempt's directory goes with its listener. A node that cannot sign fails a run that asked for an identity with
 * {@code identity_unavailable}, and runs any other without the {@code OUTRUN_API*} variables.
 */
class ApiBridgeIT {

    @Test
    void aContainerWithoutNetworkReachesTheApiWithItsTokenAndOnlyWithIt() throws Exception {
        Requirements.docker();
        List<String> seen = new CopyOnWriteArrayList<>();
        HttpServer stand = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        stand.createContext("/", x -> {
            String body = new String(x.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            seen.add(x.getRequestMethod() + " " + x.getRequestURI() + " " + x.getRequestHeaders().getFirst("Authorization"));
            byte[] answer = ("api saw " + x.getRequestMethod() + " " + x.getRequestURI() + " " + body).getBytes(StandardCharsets.UTF_8);
            x.sendResponseHeaders(200, answer.length);
            x.getResponseBody().write(answer);
            x.close();
        });
        stand.start();
        String apiUrl = "http://127.0.0.1:" + stand.getAddress().getPort();
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        // Its own node id and lease dir: other suites may share the engine and /tmp. Short: an
        // attempt's socket, <lease-dir>/api-<node>/<execution>-<epoch>/api.sock, is a unix socket
        // path (107 bytes at most).
        String node = "br-" + UUID.randomUUID().toString().substring(0, 8);
        Path leaseDir = Files.createTempDirectory(Path.of("/tmp"), "olb-");
        try (Core api = Core.open(db, "api");
             WorkerProcess w = WorkerProcess.startWith(Map.of("OUTRUN_SECRETS_KEY", newKey()), db, node, 2, "docker",
                     "--api-url", apiUrl, "--lease-dir", leaseDir.toString())) {
            // The pool full (2 per image: the node's slots), so that the run is served by one.
            Await.until("a warm pool of 2 on " + node, Duration.ofSeconds(90), () -> pooled(node) == 2);
            Execution run = run(api, Submission.of("alice",
                    "curl -sS -X POST -d hello -H \"Authorization: Bearer $OUTRUN_API_TOKEN\" \"$OUTRUN_API/v1/executions\"; echo;"
                            + " curl -sS -w '%{http_code}\\n' \"$OUTRUN_API/v1/executions\"; echo \"$OUTRUN_API\";"
                            + " echo \"${OUTRUN_ID_TOKEN-no-id-token}\";"
                            + " curl -sS -m 3 " + apiUrl + "/direct >/dev/null 2>&1 || echo no-network;"
                            // Whose API directory the container mounts: a pooled container's own.
                            + " grep -o 'pool-[0-9a-f-]*[.]api' /proc/self/mountinfo || echo fresh-container\nno_such_command"));
            String[] out = run.stdout().text().split("\n");
            assertThat(out).as(run.stdout().text() + run.stderr().text()).hasSize(6);
            assertThat(out[0]).isEqualTo("api saw POST /v1/executions hello");
            assertThat(out[1]).contains("\"code\":\"run_token_required\"").endsWith("401");
            assertThat(out[2]).isEqualTo("http://127.0.0.1:7171");
            assertThat(out[3]).isEqualTo("no-id-token");
            assertThat(out[4]).isEqualTo("no-network");
            assertThat(out[5]).as("the run took a pooled container").startsWith("pool-").endsWith(".api");
            Path poolDir = leaseDir.resolve(out[5]);
            Await.until(poolDir + " removed with its container", Duration.ofSeconds(30), () -> !Files.exists(poolDir));
            // The user's line 2 is still line 2 with the relay in front of the command.
            assertThat(run.stderr().text()).contains("line 2: no_such_command");
            // Exactly one request reached the API: the one with the token, a JWT naming this run.
            assertThat(seen).hasSize(1);
            String token = seen.get(0).substring(seen.get(0).indexOf("Bearer ") + 7);
            String claims = new String(Base64.getUrlDecoder().decode(token.split("\\.")[1]), StandardCharsets.UTF_8);
            assertThat(claims).contains("\"execution_id\":\"" + run.id() + "\"").contains("\"sub\":\"owner:alice\"")
                    .contains("\"iss\":\"" + apiUrl + "\"");
            assertThat(w.log()).as("tokens are never logged").doesNotContain(token);

            // A run that asked for an identity gets its identity token too.
            Execution identified = run(api, Submission.of("alice", "echo \"$OUTRUN_ID_TOKEN\" | cut -d. -f2")
                    .withIdentityAudience("https://service.example"));
            String idClaims = new String(Base64.getUrlDecoder().decode(identified.stdout().text().strip()), StandardCharsets.UTF_8);
            assertThat(idClaims).contains("\"aud\":\"https://service.example\"").contains("\"execution_id\":\"" + identified.id());

            // Each attempt's socket directory goes with its listener.
            Path sockets = leaseDir.resolve("api-" + node);
            Await.until("the attempts' socket directories removed", Duration.ofSeconds(30), () -> {
                try (var left = Files.list(sockets)) {
                    return left.findAny().isEmpty();
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            });
        } finally {
            stand.stop(0);
        }
    }

    @Test
    void aHostProcessUnderBubblewrapReachesTheApiThroughTheBridgeToo() throws Exception {
        Requirements.binary("bwrap");
        Requirements.binary("socat");
        List<String> seen = new CopyOnWriteArrayList<>();
        HttpServer stand = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        stand.createContext("/", x -> {
            seen.add(x.getRequestMethod() + " " + x.getRequestURI());
            byte[] answer = ("api saw " + x.getRequestMethod() + " " + x.getRequestURI()).getBytes(StandardCharsets.UTF_8);
            x.sendResponseHeaders(200, answer.length);
            x.getResponseBody().write(answer);
            x.close();
        });
        stand.start();
        String apiUrl = "http://127.0.0.1:" + stand.getAddress().getPort();
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        String node = "bw-" + UUID.randomUUID().toString().substring(0, 8);
        Path leaseDir = Files.createTempDirectory(Path.of("/tmp"), "olb-");
        try (Core api = Core.open(db, "api");
             WorkerProcess w = WorkerProcess.startWith(Map.of("OUTRUN_SECRETS_KEY", newKey()), db, node, 2, "process",
                     "--bubblewrap", "on", "--api-url", apiUrl, "--lease-dir", leaseDir.toString())) {
            Execution run = run(api, Submission.of("alice",
                    "curl -sS -H \"Authorization: Bearer $OUTRUN_API_TOKEN\" \"$OUTRUN_API/v1/executions/$OUTRUN_EXECUTION_ID\"; echo;"
                            + " curl -sS -w '%{http_code}\\n' \"$OUTRUN_API/v1/executions\"; echo \"$OUTRUN_API\";"
                            + " curl -sS -m 3 " + apiUrl + "/direct >/dev/null 2>&1 || echo no-network"));
            String[] out = run.stdout().text().split("\n");
            assertThat(out).as(run.stdout().text() + run.stderr().text()).hasSize(4);
            assertThat(out[0]).isEqualTo("api saw GET /v1/executions/" + run.id());
            assertThat(out[1]).contains("\"code\":\"run_token_required\"").endsWith("401");
            assertThat(out[2]).isEqualTo("http://127.0.0.1:7171");
            assertThat(out[3]).as("bubblewrap took its network").isEqualTo("no-network");
            assertThat(seen).containsExactly("GET /v1/executions/" + run.id());
        } finally {
            stand.stop(0);
        }
    }

    @Test
    void aNodeThatCannotSignFailsIdentityRunsAndRunsTheRestWithoutTheApi() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core api = Core.open(db, "api");
             WorkerProcess w = WorkerProcess.startWith(db, "unsigned-1", 2, "process", "--api-url", "http://127.0.0.1:9")) {
            Execution plain = run(api, Submission.of("alice", "echo \"${OUTRUN_API-none} ${OUTRUN_API_TOKEN-none}\""));
            assertThat(plain.stdout().text()).isEqualTo("none none\n");
            Execution asked = run(api, Submission.of("alice", "echo ran").withIdentityAudience("https://service.example"));
            assertThat(asked.status()).isEqualTo(ExecutionStatus.FAILED);
            assertThat(asked.errorCode()).isEqualTo("identity_unavailable");
            assertThat(asked.errorMessage()).contains("--secrets-key-file");
            assertThat(asked.stdout().text()).isEmpty();
        }
    }

    private static Execution run(Core api, Submission s) throws InterruptedException {
        UUID id = api.service().submit(s).execution().id();
        return Await.until("execution " + id + " to end", Duration.ofSeconds(90),
                () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
    }

    /** Pooled containers of node {@code node} (running or not). */
    private static int pooled(String node) {
        try {
            Process p = new ProcessBuilder("docker", "ps", "-aq", "--filter", "label=outrun.pool=1", "--filter",
                    "label=outrun.node=" + node).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            p.waitFor();
            return out.isEmpty() ? 0 : out.split("\\s+").length;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static String newKey() {
        byte[] key = new byte[32];
        new SecureRandom().nextBytes(key);
        return Base64.getEncoder().encodeToString(key);
    }
}
