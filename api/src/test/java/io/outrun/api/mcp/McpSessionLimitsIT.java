package io.outrun.api.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.api.http.ApiHarness;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * An owner cannot fill an API node's heap through MCP sessions: initialize requests are bounded
 * in size and in number per owner, and a session id is its owner's alone; a browser page of
 * another site cannot call at all (Origin).
 */
class McpSessionLimitsIT {

    static ApiHarness api;
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        api = ApiHarness.start();
    }

    @AfterAll
    static void stop() {
        api.close();
    }

    @Test
    void oversizedInitializeCallsAreRefusedAndRetainNothing() throws Exception {
        long before = usedHeapAfterGc();
        String name = "n".repeat(1 << 20);
        int refused = 0;
        for (int i = 0; i < 1000; i++) {
            try {
                HttpResponse<String> r = post(api.aliceToken, null, initialize(name));
                assertThat(r.statusCode()).as(r.body()).isEqualTo(413);
                assertThat(r.body()).contains("request_too_large");
                refused++;
            } catch (IOException closedEarly) {
                // The node answered 413 and closed the connection before the whole body was sent.
                refused++;
            }
        }
        assertThat(refused).isEqualTo(1000);
        long grown = usedHeapAfterGc() - before;
        assertThat(grown).as("heap retained after 1,000 oversized initializes").isLessThan(32L << 20);
        // Nobody else is hurt: bob still opens a session and lists the tools.
        String bob = open(api.bobToken);
        HttpResponse<String> tools = post(api.bobToken, bob, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
        assertThat(tools.statusCode()).isEqualTo(200);
        assertThat(tools.body()).contains("run_command");
        delete(api.bobToken, bob);
    }

    @Test
    void sessionsPerOwnerAreCappedAndBoundToTheirOwner() throws Exception {
        List<String> opened = new ArrayList<>();
        for (int i = 0; i < McpSessions.MAX_PER_OWNER; i++) {
            opened.add(open(api.aliceToken));
        }
        HttpResponse<String> over = post(api.aliceToken, null, initialize("agent"));
        assertThat(over.statusCode()).isEqualTo(429);
        assertThat(over.body()).contains("too_many_sessions").contains("DELETE /mcp");
        assertThat(over.headers().firstValue("Retry-After")).isPresent();

        // An initialize is one whatever session header it carries: still counted.
        HttpResponse<String> disguised = post(api.aliceToken, "made-up-1", initialize("agent"));
        assertThat(disguised.statusCode()).as(disguised.body()).isEqualTo(429);
        HttpResponse<String> madeUp = post(api.aliceToken, "made-up-2", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
        assertThat(madeUp.statusCode()).isEqualTo(404);
        assertThat(madeUp.body()).contains("session_not_found");

        // Bob cannot use or delete alice's session: it answers as an unknown one.
        String alices = opened.get(0);
        HttpResponse<String> foreign = post(api.bobToken, alices, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
        assertThat(foreign.statusCode()).isEqualTo(404);
        assertThat(delete(api.bobToken, alices)).isEqualTo(404);
        HttpResponse<String> own = post(api.aliceToken, alices, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
        assertThat(own.statusCode()).as(own.body()).isEqualTo(200);

        // Closing one makes room for one.
        assertThat(delete(api.aliceToken, alices)).isEqualTo(200);
        opened.remove(0);
        opened.add(open(api.aliceToken));
        assertThat(post(api.aliceToken, null, initialize("agent")).statusCode()).isEqualTo(429);
        for (String id : opened) {
            delete(api.aliceToken, id);
        }
        opened.clear();
        opened.add(open(api.aliceToken));
        delete(api.aliceToken, opened.get(0));
    }

    /**
     * Issue 25 (low): the SDK's transport answered a bad request with its serialized Java
     * exception (class, cause, about 40 stack frames); now a plain JSON-RPC error.
     */
    @Test
    void aBadRequestAnswersAPlainJsonRpcErrorWithoutAStackTrace() throws Exception {
        String session = open(api.aliceToken);
        for (String body : new String[] {"{not json", "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", "[]", "42"}) {
            HttpResponse<String> r = post(api.aliceToken, session, body);
            assertThat(r.statusCode()).as(body).isGreaterThanOrEqualTo(400);
            assertThat(r.body()).as(body).doesNotContain("stackTrace").doesNotContain("java.").doesNotContain("at io.")
                    .contains("\"jsonrpc\":\"2.0\"").contains("\"error\"");
        }
        HttpResponse<String> noAccept = HTTP.send(HttpRequest.newBuilder(URI.create(api.base() + "/mcp"))
                .header("Authorization", "Bearer " + api.aliceToken).header("Content-Type", "application/json")
                .header("Mcp-Session-Id", session)
                .POST(HttpRequest.BodyPublishers.ofString("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(noAccept.statusCode()).isEqualTo(400);
        assertThat(noAccept.body()).doesNotContain("stackTrace").contains("\"error\"");
        delete(api.aliceToken, session);
    }

    @Test
    void aBrowserPageOfAnotherSiteIsRefused() throws Exception {
        for (String origin : new String[] {"http://evil.example", "null", "file://x", "http://evil.example:" + api.base().getPort()}) {
            HttpResponse<String> r = post(api.aliceToken, null, initialize("page"), origin);
            assertThat(r.statusCode()).as(origin).isEqualTo(403);
            assertThat(r.body()).contains("origin_not_allowed");
        }
        // DNS rebinding: the attacker's page names its own host in both Origin and Host.
        int port = api.base().getPort();
        String body = initialize("page");
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
            socket.getOutputStream().write(("POST /mcp HTTP/1.1\r\nHost: evil.example:" + port + "\r\nOrigin: http://evil.example:"
                    + port + "\r\nAuthorization: Bearer " + api.aliceToken + "\r\nContent-Type: application/json\r\n"
                    + "Accept: application/json, text/event-stream\r\nContent-Length: " + body.length()
                    + "\r\nConnection: close\r\n\r\n" + body).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            String answer = new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            assertThat(answer).startsWith("HTTP/1.1 403").contains("origin_not_allowed");
        }
        HttpResponse<String> local = post(api.aliceToken, null, initialize("inspector"), "http://localhost:6274");
        assertThat(local.statusCode()).as("a local inspector").isEqualTo(200);
        delete(api.aliceToken, local.headers().firstValue("Mcp-Session-Id").orElseThrow());
    }

    private static String initialize(String clientName) {
        return "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\","
                + "\"capabilities\":{},\"clientInfo\":{\"name\":\"" + clientName + "\",\"version\":\"1\"}}}";
    }

    /** Initializes a session (and sends the initialized notification), returning its id. */
    private static String open(String token) throws Exception {
        HttpResponse<String> r = post(token, null, initialize("agent"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        String id = r.headers().firstValue("Mcp-Session-Id").orElseThrow();
        HttpResponse<String> ack = post(token, id, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        assertThat(ack.statusCode()).isBetween(200, 299);
        return id;
    }

    private static HttpResponse<String> post(String token, String session, String body) throws IOException, InterruptedException {
        return post(token, session, body, null);
    }

    private static HttpResponse<String> post(String token, String session, String body, String origin)
            throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(api.base() + "/mcp"))
                .header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (session != null) {
            b.header("Mcp-Session-Id", session);
        }
        if (origin != null) {
            b.header("Origin", origin);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static int delete(String token, String session) throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(URI.create(api.base() + "/mcp"))
                .header("Authorization", "Bearer " + token).header("Mcp-Session-Id", session)
                .DELETE().build(), HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    private static long usedHeapAfterGc() {
        // System.gc() is a full, stop-the-world collection that returns when done; twice so that
        // objects a first pass only finalized are gone too.
        System.gc();
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
