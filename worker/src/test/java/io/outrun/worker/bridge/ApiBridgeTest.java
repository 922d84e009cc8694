package io.outrun.worker.bridge;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The bridge over its real unix socket, in front of a real HTTP server on loopback: only a
 * request carrying the attempt's own run token reaches the server (with its body, its answer
 * relayed back, Host rewritten); any other is answered 401 in the API's error shape and nothing
 * of it is forwarded; closing the listener ends the connections it carried.
 */
class ApiBridgeTest {

    private HttpServer api;
    /** What the server received: "METHOD path|Host|Authorization|Connection|body". */
    private final List<String> seen = new CopyOnWriteArrayList<>();
    private final CountDownLatch hangs = new CountDownLatch(1);

    @BeforeEach
    void serve() throws IOException {
        api = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        api.createContext("/", x -> {
            String body = new String(x.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            seen.add(x.getRequestMethod() + " " + x.getRequestURI() + "|" + x.getRequestHeaders().getFirst("Host") + "|"
                    + x.getRequestHeaders().getFirst("Authorization") + "|" + x.getRequestHeaders().getFirst("Connection")
                    + "|" + body);
            if (x.getRequestURI().getPath().equals("/hang")) {
                try {
                    hangs.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            byte[] answer = ("got:" + body).getBytes(StandardCharsets.UTF_8);
            x.sendResponseHeaders(201, answer.length);
            x.getResponseBody().write(answer);
            x.close();
        });
        api.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
        api.start();
    }

    @AfterEach
    void stop() {
        hangs.countDown();
        api.stop(0);
    }

    private String apiUrl() {
        return "http://127.0.0.1:" + api.getAddress().getPort();
    }

    @Test
    void theRunsOwnTokenReachesTheApiWithItsBodyAndGetsItsAnswer(@TempDir Path dir) throws Exception {
        try (ApiBridge bridge = ApiBridge.start(dir.resolve("api"), apiUrl());
             ApiBridge.Listener run = bridge.open("run-1", "token-of-run-1")) {
            String answer = exchange(run.socket(), "POST /v1/executions?x=1 HTTP/1.1\r\nHost: 127.0.0.1:7171\r\n"
                    + "authorization: bearer token-of-run-1\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhello");
            assertThat(answer).startsWith("HTTP/1.1 201").endsWith("got:hello");
            assertThat(seen).containsExactly("POST /v1/executions?x=1|127.0.0.1:" + api.getAddress().getPort()
                    + "|bearer token-of-run-1|close|hello");
        }
    }

    @Test
    void anyOtherRequestIsAnswered401HereAndNothingOfItIsForwarded(@TempDir Path dir) throws Exception {
        try (ApiBridge bridge = ApiBridge.start(dir.resolve("api"), apiUrl());
             ApiBridge.Listener run = bridge.open("run-1", "token-of-run-1");
             ApiBridge.Listener other = bridge.open("run-2", "token-of-run-2")) {
            for (String auth : List.of("", "Authorization: Bearer token-of-run-2\r\n", "Authorization: Bearer token-of-run-\r\n",
                    "Authorization: Basic dG9rZW4tb2YtcnVuLTE=\r\n",
                    "Authorization: Bearer token-of-run-1\r\nAuthorization: Bearer token-of-run-2\r\n")) {
                String answer = exchange(run.socket(), "GET /v1/executions HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n");
                assertThat(answer).as(auth).startsWith("HTTP/1.1 401").contains("WWW-Authenticate: Bearer")
                        .contains("{\"status\":\"error\",\"error\":{\"code\":\"run_token_required\",\"message\":")
                        .contains("\"guidance\":");
            }
            // An absolute URI would name another host: refused as well.
            assertThat(exchange(run.socket(), "GET http://10.0.0.1/ HTTP/1.1\r\nAuthorization: Bearer token-of-run-1\r\n\r\n"))
                    .startsWith("HTTP/1.1 400");
            assertThat(seen).isEmpty();
            assertThat(exchange(other.socket(), "GET /v1/x HTTP/1.1\r\nAuthorization: Bearer token-of-run-2\r\n\r\n"))
                    .as("each listener lets its own run's token through").startsWith("HTTP/1.1 201");
        }
    }

    @Test
    void aHeadFramedOtherwiseThanByCrlfIsRefusedAndNothingOfItIsForwarded(@TempDir Path dir) throws Exception {
        try (ApiBridge bridge = ApiBridge.start(dir.resolve("api"), apiUrl());
             ApiBridge.Listener run = bridge.open("run-1", "token-of-run-1")) {
            // The API's parser takes a bare LF as a line's end: a second Authorization the
            // bridge read as part of another header would reach the API first.
            for (String head : List.of(
                    "GET /v1/admin/nodes HTTP/1.1\r\nX-A: a\nAuthorization: Bearer owner-token\r\n"
                            + "Authorization: Bearer token-of-run-1\r\n\r\n",
                    "GET /v1/admin/nodes HTTP/1.1\r\nX-A: a\rAuthorization: Bearer owner-token\r\n"
                            + "Authorization: Bearer token-of-run-1\r\n\r\n",
                    "GET /v1/admin/nodes HTTP/1.1\nAuthorization: Bearer owner-token\r\n"
                            + "Authorization: Bearer token-of-run-1\r\n\r\n",
                    "GET /v1/x HTTP/1.1\r\nAuthorization: Bearer token-of-run-1\r\nX-A: a\r\n folded\r\n\r\n",
                    "GET /v1/x HTTP/1.1\r\nAuthorization: Bearer token-of-run-1\r\nX-A: a\u0000b\r\n\r\n")) {
                assertThat(exchange(run.socket(), head)).as(head).startsWith("HTTP/1.1 400");
            }
            assertThat(seen).isEmpty();
        }
    }

    @Test
    void closingTheListenerEndsTheConnectionsItCarried(@TempDir Path dir) throws Exception {
        try (ApiBridge bridge = ApiBridge.start(dir.resolve("api"), apiUrl())) {
            ApiBridge.Listener run = bridge.open("run-1", "t");
            // Alone in a directory of its own (what a container mounts), which the sandbox's user traverses.
            assertThat(run.socket()).isEqualTo(dir.resolve("api").resolve("run-1").resolve("api.sock"));
            assertThat(java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(run.socket().getParent())))
                    .isEqualTo("rwxr-xr-x");
            SocketChannel open = connect(run.socket());
            open.write(ByteBuffer.wrap("GET /hang HTTP/1.1\r\nAuthorization: Bearer t\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1)));
            io.outrun.testing.Await.until("the request to reach the API", java.time.Duration.ofSeconds(10),
                    () -> seen.isEmpty() ? null : true);
            assertThat(seen).as("the request reached the API").hasSize(1);
            run.close();
            assertThat(open.read(ByteBuffer.allocate(64))).as("closed with its attempt, before any answer").isEqualTo(-1);
            open.close();
            assertThat(Files.exists(run.socket())).isFalse();
            assertThat(run.socket().getParent()).as("its directory goes with it").doesNotExist();
            assertThat(dir.resolve("api")).isDirectory();
        }
    }

    /** A warm pool's container gets the socket by a hard link into its own directory: the listener answers through it. */
    @Test
    void aRestartedNodeRemovesTheAttemptDirectoriesItsKilledProcessLeft(@TempDir Path dir) throws Exception {
        Path api = dir.resolve("api");
        java.nio.file.Files.createDirectories(api.resolve("0badf00d-3"));
        java.nio.file.Files.writeString(api.resolve("0badf00d-3").resolve("api.sock"), "stale");
        try (ApiBridge bridge = ApiBridge.start(api, apiUrl())) {
            org.assertj.core.api.Assertions.assertThat(api.resolve("0badf00d-3")).doesNotExist();
            org.assertj.core.api.Assertions.assertThat(api).isDirectory();
        }
    }

    @Test
    void aHardLinkToTheSocketReachesTheListener(@TempDir Path dir) throws Exception {
        try (ApiBridge bridge = ApiBridge.start(dir.resolve("api"), apiUrl());
             ApiBridge.Listener run = bridge.open("run-1", "token-of-run-1")) {
            Path pool = Files.createDirectory(dir.resolve("pool-1.api"));
            Path link = Files.createLink(pool.resolve("api.sock"), run.socket());
            assertThat(exchange(link, "GET /v1/x HTTP/1.1\r\nAuthorization: Bearer token-of-run-1\r\n\r\n"))
                    .startsWith("HTTP/1.1 201");
            run.close();
            assertThat(link).as("the link stays until the pool removes it").exists();
            // The listening socket is closed as its accept thread lets go of it: a moment, not at once.
            boolean refused = io.outrun.testing.Await.until("the link to lead nowhere once the attempt ended",
                    java.time.Duration.ofSeconds(5), () -> {
                        try (SocketChannel c = connect(link)) {
                            return null;
                        } catch (java.net.ConnectException e) {
                            return true;
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    });
            assertThat(refused).as("but leads nowhere once the attempt ended").isTrue();
        }
    }

    @Test
    void aNodeStartingRemovesTheSocketsAndDirectoriesOfDeadNodesOnly(@TempDir Path leases) throws Exception {
        // A node SIGKILLed mid-run: its directory and its attempt's socket stay, nobody listens.
        Path dead = leases.resolve("api-node-dead");
        Files.createDirectories(dead.resolve("0badf00d-1"));
        try (var s = java.nio.channels.ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            s.bind(UnixDomainSocketAddress.of(dead.resolve("0badf00d-1").resolve(io.outrun.sandbox.Limits.API_SOCKET_NAME)));
        }
        Files.createDirectories(leases.resolve("api-node-idle"));
        try (ApiBridge live = ApiBridge.start(leases.resolve("api-node-live"), apiUrl());
             ApiBridge.Listener running = live.open("run-2", "t2");
             ApiBridge fresh = ApiBridge.start(leases.resolve("api-node-new"), apiUrl())) {
            assertThat(dead).doesNotExist();
            assertThat(leases.resolve("api-node-idle")).doesNotExist();
            assertThat(running.socket()).as("a live node's run keeps its socket").exists();
            assertThat(exchange(running.socket(), "GET /v1/x HTTP/1.1\r\nAuthorization: Bearer t2\r\n\r\n"))
                    .startsWith("HTTP/1.1 201");
            // A live node whose (empty) directory was pruned makes it again for its next run.
            running.close();
            try (ApiBridge third = ApiBridge.start(leases.resolve("api-node-third"), apiUrl())) {
                assertThat(leases.resolve("api-node-live")).doesNotExist();
            }
            try (ApiBridge.Listener next = live.open("run-3", "t3")) {
                assertThat(next.socket()).exists();
            }
        }
    }

    private static SocketChannel connect(Path socket) throws IOException {
        SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX);
        c.connect(UnixDomainSocketAddress.of(socket));
        return c;
    }

    private static String exchange(Path socket, String request) throws IOException {
        try (SocketChannel c = connect(socket)) {
            c.write(ByteBuffer.wrap(request.getBytes(StandardCharsets.ISO_8859_1)));
            ByteBuffer buf = ByteBuffer.allocate(4096);
            StringBuilder out = new StringBuilder();
            while (c.read(buf) >= 0) {
                buf.flip();
                out.append(StandardCharsets.ISO_8859_1.decode(buf));
                buf.clear();
            }
            return out.toString();
        }
    }
}
