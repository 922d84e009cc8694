package io.outrun.worker.node;

import com.sun.net.httpserver.HttpServer;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.Resources;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 27: a run that asks for {@code "network": "egress"} reaches the hosts the operator
 * allows, and nothing else, through its node's proxy, with the tools users run: curl over HTTP
 * and through a CONNECT tunnel, and {@code pip install} from a package index. The index is
 * served by this test on the host, at the Docker bridge's address (a private address, so it
 * must be listed literally); a second server on the same host is not listed.
 */
class EgressIT {

    @Test
    void egressReachesOnlyWhatTheOperatorAllows() throws Exception {
        Requirements.docker();
        String host = NetworkInterface.getByName("docker0").inetAddresses()
                .filter(a -> a instanceof Inet4Address).findFirst().orElseThrow().getHostAddress();
        HttpServer index = serve(Map.of(
                "/hello", "hello from the index".getBytes(StandardCharsets.UTF_8),
                "/simple/demo/", "<html><body><a href=\"/packages/demo-1.0-py3-none-any.whl\">demo-1.0-py3-none-any.whl</a></body></html>"
                        .getBytes(StandardCharsets.UTF_8),
                "/packages/demo-1.0-py3-none-any.whl", wheel()));
        HttpServer other = serve(Map.of("/", "not for runs".getBytes(StandardCharsets.UTF_8)));
        int port = index.getAddress().getPort();
        int otherPort = other.getAddress().getPort();
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        int metricsPort;
        try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
            metricsPort = free.getLocalPort();
        }
        try (Core api = Core.open(db, "api");
             WorkerProcess w = WorkerProcess.startWith(db, "egress-1", 2, "docker", "--egress-allow", host + ":" + port,
                     "--metrics-port", Integer.toString(metricsPort))) {
            String hello = "http://" + host + ":" + port + "/hello";
            Execution allowed = run(api, "curl -sS " + hello + "; echo; curl -sS --proxytunnel " + hello + "; echo", true);
            assertThat(allowed.stdout().text()).as(allowed.stderr().text())
                    .isEqualTo("hello from the index\nhello from the index\n");

            Execution refused = run(api, "curl -sS -w '%{http_code}\\n' http://" + host + ":" + otherPort + "/;"
                    + " curl -sS --noproxy '' -w '%{http_code}\\n' http://localhost:" + port + "/hello", true);
            assertThat(refused.stdout().text()).as(refused.stderr().text())
                    .contains(host + ":" + otherPort + " refused").contains("--egress-allow").contains("403")
                    .contains("localhost:" + port + " refused").doesNotContain("not for runs").doesNotContain("hello from");
            // Each refusal is also noted on the run's stderr, for an owner who reads only that.
            assertThat(refused.stderr().text()).contains("outrun egress: " + host + ":" + otherPort + " refused")
                    .contains("outrun egress: localhost:" + port + " refused");

            // The Host the far end sees is the one that was checked, not one the run made up.
            Execution seen = run(api, "curl -sS -H 'Host: metadata.internal' http://" + host + ":" + port + "/host", true);
            assertThat(seen.stdout().text()).isEqualTo("host=" + host + ":" + port);

            // One run holding its 32 connections gets 503 for more, while another run's egress works.
            // (The relay forks a connection to the proxy per connection, a few a second: wait for them.)
            UUID greedy = submit(api, "python3 -c 'import socket,time; s=[socket.create_connection((\"127.0.0.1\",3128))"
                    + " for _ in range(40)]; time.sleep(25)' & for i in $(seq 40); do out=$(curl -sS " + hello + ");"
                    + " case \"$out\" in *'already has'*) echo \"$out\"; break;; esac; sleep 0.5; done; kill %1", true);
            Execution neighbour = run(api, "curl -sS " + hello, true);
            assertThat(neighbour.stdout().text()).isEqualTo("hello from the index");
            Execution g = end(api, greedy);
            assertThat(g.stdout().text()).as("stderr: " + g.stderr().text()).contains("already has 32 connections open");

            Execution pip = run(api, "python3 -m pip install -q --no-cache-dir --disable-pip-version-check"
                    + " --index-url http://" + host + ":" + port + "/simple --trusted-host " + host
                    + " --target /work/deps demo && PYTHONPATH=/work/deps python3 -c 'import demo; print(demo.VALUE)'", true);
            assertThat(pip.exitCode()).as(pip.stderr().text()).isZero();
            assertThat(pip.stdout().text()).isEqualTo("42\n");

            Execution none = run(api, "curl -sS -m 5 " + hello + " || echo no-network", false);
            assertThat(none.stdout().text()).isEqualTo("no-network\n");

            String metrics = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create("http://127.0.0.1:" + metricsPort + "/metrics")).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString()).body();
            assertThat(metrics).containsPattern("outrun_node_egress_connections_total\\{node=\"egress-1\",result=\"refused\"\\} 2.0")
                    .containsPattern("outrun_node_egress_connections_total\\{node=\"egress-1\",result=\"allowed\"\\} ([4-9]|[1-9][0-9]+)\\.0");
        } finally {
            index.stop(0);
            other.stop(0);
        }
    }

    private static Execution run(Core api, String command, boolean egress) throws InterruptedException {
        return end(api, submit(api, command, egress));
    }

    private static UUID submit(Core api, String command, boolean egress) {
        Submission s = Submission.of("alice", command);
        if (egress) {
            s = s.withResources(Resources.NONE.withNetwork(Resources.EGRESS));
        }
        return api.service().submit(s).execution().id();
    }

    private static Execution end(Core api, UUID id) throws InterruptedException {
        return Await.until("execution " + id + " to end", Duration.ofSeconds(90),
                () -> api.submissions().find(id).filter(e -> e.status().isTerminal()).orElse(null));
    }

    private static HttpServer serve(Map<String, byte[]> pages) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress("0.0.0.0", 0), 64);
        server.createContext("/", x -> {
            byte[] body = x.getRequestURI().getPath().equals("/host")
                    ? ("host=" + x.getRequestHeaders().getFirst("Host")).getBytes(StandardCharsets.UTF_8)
                    : pages.get(x.getRequestURI().getPath());
            if (body == null) {
                x.sendResponseHeaders(404, -1);
            } else {
                x.getResponseHeaders().add("Content-Type", x.getRequestURI().getPath().endsWith("/") ? "text/html"
                        : "application/octet-stream");
                x.sendResponseHeaders(200, body.length);
                x.getResponseBody().write(body);
            }
            x.close();
        });
        server.start();
        return server;
    }

    /** A pure-python wheel of one module, {@code demo.VALUE = 42}, with a correct RECORD. */
    private static byte[] wheel() throws Exception {
        Map<String, byte[]> files = new LinkedHashMap<>();
        files.put("demo.py", "VALUE = 42\n".getBytes(StandardCharsets.UTF_8));
        files.put("demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n".getBytes(StandardCharsets.UTF_8));
        files.put("demo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: outrun-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
                .getBytes(StandardCharsets.UTF_8));
        StringBuilder record = new StringBuilder();
        for (Map.Entry<String, byte[]> f : files.entrySet()) {
            String hash = Base64.getUrlEncoder().withoutPadding().encodeToString(
                    MessageDigest.getInstance("SHA-256").digest(f.getValue()));
            record.append(f.getKey()).append(",sha256=").append(hash).append(',').append(f.getValue().length).append('\n');
        }
        record.append("demo-1.0.dist-info/RECORD,,\n");
        files.put("demo-1.0.dist-info/RECORD", record.toString().getBytes(StandardCharsets.UTF_8));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
            for (Map.Entry<String, byte[]> f : files.entrySet()) {
                zip.putNextEntry(new ZipEntry(f.getKey()));
                zip.write(f.getValue());
                zip.closeEntry();
            }
        }
        return bytes.toByteArray();
    }
}
