package io.outrun.worker.bridge;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.client.wire.ErrorBody;
import io.outrun.core.identity.Issuer;
import io.outrun.sandbox.Limits;
import io.outrun.worker.proxy.RunSocket;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.stream.Stream;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Outrun's API, reachable from inside a run's container, which has no network (issue 31). Each
 * attempt gets a listener of its own ({@link #open}): a unix socket alone in a directory of its
 * own under the node's lease dir, {@code api-<node>/<attempt>/api.sock}; the container gets that
 * directory bind-mounted (or, when it came from the warm pool, the socket hard-linked into the
 * directory it was created with), so the socket is at {@link #CONTAINER_SOCKET} there, where a
 * relay in the container serves it on 127.0.0.1:{@value #CONTAINER_PORT} (the sandbox's: started by
 * a pooled container's bootstrap before it waits, by a fresh one's before its command; under
 * bubblewrap by the run's wrapper, a spare's before it waits; a spare's relay looks in a
 * directory {@code spare-*} of its own here, where its run's socket is hard-linked).
 * A connection is relayed to the node's {@code --api-url} only when its request head carries
 * {@code Authorization: Bearer <that attempt's run token>}; anything else is answered 401 here
 * and nothing of it reaches the API. The run token is what the API checks; the bridge's own check
 * keeps a run that lost its token (or never had one) off the API altogether.
 *
 * <p>One request per connection: the bridge sends {@code Connection: close} and {@code Host} set
 * to the API's authority, then relays the bytes both ways (the request's body too). As for the
 * egress proxy, a run holds at most {@link #MAX_CONNECTIONS_PER_RUN} connections, and its
 * listener and every connection it carried close with its attempt.
 */
public final class ApiBridge implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ApiBridge.class);

    /** Where the socket appears inside a run's container, the relay's port there, and what {@code OUTRUN_API} says. */
    public static final String CONTAINER_SOCKET = "/run/outrun-api/" + Limits.API_SOCKET_NAME;
    public static final int CONTAINER_PORT = Limits.API_RELAY_PORT;
    public static final String CONTAINER_URL = "http://127.0.0.1:" + CONTAINER_PORT;
    static final int MAX_CONNECTIONS_PER_RUN = 32;
    private static final int MAX_HEAD = 16 * 1024;
    private static final int CONNECT_TIMEOUT_MS = 10_000;
    /** A connection that has not sent its request head by then is closed. */
    private static final long HEAD_TIMEOUT_MS = 10_000;
    /** An answer silent this long is cut (a long poll waits 30 s at most). */
    private static final int IDLE_TIMEOUT_MS = 120_000;

    private final Path dir;
    /** Whether the runs are containers (the sandbox's user owns the sockets) or host processes. */
    private final boolean containers;
    private final String host;
    private final int port;
    private final boolean tls;
    /** The API's host[:port], as its requests' {@code Host}. */
    private final String authority;
    /** The --api-url's path, before each request's own ("" for none). */
    private final String basePath;
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "outrun-api-bridge");
        t.setDaemon(true);
        return t;
    });
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "outrun-api-bridge-timer");
        t.setDaemon(true);
        return t;
    });
    private volatile boolean closed;

    private ApiBridge(Path dir, URI api, boolean containers) throws IOException {
        this.dir = dir;
        this.containers = containers;
        this.tls = "https".equals(api.getScheme());
        this.host = api.getHost();
        this.port = api.getPort() > 0 ? api.getPort() : tls ? 443 : 80;
        this.authority = api.getPort() > 0 ? api.getHost() + ":" + api.getPort() : api.getHost();
        this.basePath = api.getRawPath() == null ? "" : api.getRawPath(); // normalized: no trailing slash
        pruneDeadNodes(dir);
        RunSocket.prepareDirectory(dir);
        removeLeftovers(dir);
    }

    /**
     * Removes what the bridges of other nodes that died left beside {@code dir} in the lease dir
     * ({@link #removeLeftovers} sees only this node's own, and node ids are random per start by
     * default): {@code api-<node>} directories, their attempts' directories and sockets. An
     * attempt's socket nobody listens on refuses a connection; one that answers is a live node's
     * (two nodes may share a lease dir) and stays. A live node whose directory went while empty
     * makes it again at its next attempt ({@link #open}).
     */
    static int pruneDeadNodes(Path dir) {
        Path own = dir.toAbsolutePath();
        Path parent = own.getParent();
        int removed = 0;
        if (parent == null || !Files.isDirectory(parent)) {
            return 0;
        }
        try (Stream<Path> nodes = Files.list(parent)) {
            for (Path node : (Iterable<Path>) nodes::iterator) {
                if (!node.getFileName().toString().startsWith("api-") || node.equals(own)
                        || !Files.isDirectory(node, LinkOption.NOFOLLOW_LINKS)) {
                    continue;
                }
                try (Stream<Path> attempts = Files.list(node)) {
                    for (Path attempt : (Iterable<Path>) attempts::iterator) {
                        Path socket = attempt.resolve(Limits.API_SOCKET_NAME);
                        if (Files.isDirectory(attempt, LinkOption.NOFOLLOW_LINKS) && !listening(socket)) {
                            Files.deleteIfExists(socket);
                            Files.deleteIfExists(attempt);
                            removed++;
                        }
                    }
                    Files.deleteIfExists(node); // only when empty: a live node's attempts stay
                } catch (IOException liveOrGone) {
                    // Some node still serves a run there, or it went meanwhile.
                }
            }
        } catch (IOException e) {
            // Best effort: the next node start tries again.
        }
        return removed;
    }

    private static boolean listening(Path socket) {
        if (!Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
            return false;
        }
        try (SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            c.connect(UnixDomainSocketAddress.of(socket));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * The attempt directories an earlier process of this node left (it was killed): their runs
     * are over (their containers were this node's, cleaned at its start), and no listener of this
     * process exists yet.
     */
    private static void removeLeftovers(Path dir) throws IOException {
        try (Stream<Path> left = Files.list(dir)) {
            for (Path attempt : (Iterable<Path>) left::iterator) {
                if (Files.isDirectory(attempt, LinkOption.NOFOLLOW_LINKS)) {
                    Files.deleteIfExists(attempt.resolve(Limits.API_SOCKET_NAME));
                    Files.deleteIfExists(attempt);
                }
            }
        }
    }

    /** A bridge to {@code apiUrl} whose per-attempt sockets live in {@code dir} (a path the Docker engine sees). */
    public static ApiBridge start(Path dir, String apiUrl) throws IOException {
        return start(dir, apiUrl, true);
    }

    /**
     * As {@link #start(Path, String)}; {@code containers} false: for host processes (bubblewrap),
     * which run as the node's own user, so their sockets stay the node's.
     */
    public static ApiBridge start(Path dir, String apiUrl, boolean containers) throws IOException {
        return new ApiBridge(dir, URI.create(Issuer.normalize(apiUrl, "--api-url")), containers);
    }

    /**
     * A listener for one attempt, in a directory named after it ({@code name}: a single path
     * element), that lets through requests carrying {@code runToken} alone.
     */
    public Listener open(String name, String runToken) throws IOException {
        if (closed) {
            throw new IOException("the API bridge is closed");
        }
        if (runToken == null || runToken.isEmpty()) {
            throw new IllegalArgumentException("a listener needs its attempt's run token");
        }
        Path own = dir.resolve(name);
        if (!dir.equals(own.getParent()) || name.equals(".") || name.equals("..")) {
            throw new IllegalArgumentException("a listener's name is one path element, got: " + name);
        }
        // Its own directory, so that it alone is mounted into the run's container: 0755, for the
        // sandbox's user to reach the socket (which is that user's alone, see RunSocket).
        RunSocket.prepareDirectory(dir); // another node's start may have pruned it while it was empty
        Files.createDirectories(own);
        Files.setPosixFilePermissions(own, PosixFilePermissions.fromString("rwxr-xr-x"));
        try {
            return new Listener(own.resolve(Limits.API_SOCKET_NAME), runToken);
        } catch (IOException | RuntimeException e) {
            try {
                Files.deleteIfExists(own);
            } catch (IOException notEmpty) {
                // The socket half made: left as a stale file, the next listener of this name replaces it.
            }
            throw e;
        }
    }

    /** One attempt's listener; closing it ends every connection it carried, and removes its socket and directory. */
    public final class Listener implements AutoCloseable {
        private final RunSocket socket;
        private final byte[] expected;

        private Listener(Path socket, String runToken) throws IOException {
            this.expected = ("Bearer " + runToken).getBytes(StandardCharsets.ISO_8859_1);
            this.socket = containers
                    ? RunSocket.open(socket, MAX_CONNECTIONS_PER_RUN, threads, (client, run) -> serve(client, run, expected),
                            (client, run) -> full(client))
                    : RunSocket.openForNodeUser(socket, MAX_CONNECTIONS_PER_RUN, threads,
                            (client, run) -> serve(client, run, expected), (client, run) -> full(client));
        }

        /** The socket, {@value Limits#API_SOCKET_NAME} in the attempt's directory: what {@link Limits#apiSocket} names. */
        public Path socket() {
            return socket.path();
        }

        /** Never the token. */
        @Override
        public String toString() {
            return "ApiBridge.Listener[" + socket.path() + "]";
        }

        @Override
        public void close() {
            socket.close(); // removes the socket
            Path own = socket.path().getParent();
            try {
                Files.deleteIfExists(own);
            } catch (IOException e) {
                LOG.debug("cannot remove the API socket directory {}: {}", own, e.toString());
            }
        }
    }

    private void serve(SocketChannel client, RunSocket run, byte[] expected) throws IOException {
        InputStream in = RunSocket.input(client);
        OutputStream out = RunSocket.output(client);
        byte[] head = RunSocket.readHead(client, in, MAX_HEAD, timer, HEAD_TIMEOUT_MS);
        if (head == null) {
            return; // closed before a request (the relay's readiness check)
        }
        String text = new String(head, StandardCharsets.ISO_8859_1);
        int lineEnd = text.indexOf("\r\n");
        String[] requestLine = lineEnd < 0 ? new String[0] : text.substring(0, lineEnd).split(" ");
        // Origin form only (a path): an absolute URI would name another host than the API.
        if (!text.endsWith("\r\n\r\n") || !crlfFramed(text) || requestLine.length != 3 || !requestLine[0].matches("[A-Z]{1,16}")
                || !requestLine[1].startsWith("/") || !requestLine[2].startsWith("HTTP/1.")) {
            answer(out, 400, "bad_request", "Not an HTTP/1.1 request to Outrun's API (a path, not a URL).",
                    "Send requests to $OUTRUN_API, e.g. curl -H \"Authorization: Bearer $OUTRUN_API_TOKEN\" $OUTRUN_API/v1/executions.");
            return;
        }
        if (!carries(text.substring(lineEnd + 2), expected)) {
            answer(out, 401, "run_token_required", "Requests through $OUTRUN_API must carry this run's own token.",
                    "Send Authorization: Bearer $OUTRUN_API_TOKEN (the run's environment holds it).");
            return;
        }
        Socket upstream = new Socket();
        run.track(upstream);
        try (upstream) {
            Socket api;
            try {
                upstream.connect(new InetSocketAddress(host, port), CONNECT_TIMEOUT_MS);
                upstream.setSoTimeout(IDLE_TIMEOUT_MS);
                api = tls ? tls(upstream) : upstream;
            } catch (IOException e) {
                answer(out, 502, "api_unreachable", "This run's node could not reach Outrun's API (" + e.getMessage() + ").",
                        "Retry in a few seconds; if it lasts, tell the operator (the worker's --api-url).");
                return;
            }
            String forwarded = requestLine[0] + " " + basePath + requestLine[1] + " " + requestLine[2] + "\r\n"
                    + RunSocket.forwardedHeaders(text, lineEnd, authority);
            api.getOutputStream().write(forwarded.getBytes(StandardCharsets.ISO_8859_1));
            RunSocket.relay(in, out, api, threads);
        } finally {
            run.untrack(upstream);
        }
    }

    /**
     * True when every line of {@code head} ends with CRLF and holds no other control character
     * than a tab, and no header line is folded: the API's parser takes a bare LF (or CR) as a
     * line's end and a fold as part of the line before, so a head framed otherwise could carry
     * headers, a second Authorization above all, that the bridge's check never saw.
     */
    static boolean crlfFramed(String head) {
        for (int i = 0; i < head.length(); i++) {
            char c = head.charAt(i);
            if (c == '\r') {
                if (i + 1 >= head.length() || head.charAt(i + 1) != '\n') {
                    return false;
                }
                i++;
                if (i + 1 < head.length() && (head.charAt(i + 1) == ' ' || head.charAt(i + 1) == '\t')) {
                    return false; // obs-fold
                }
            } else if (c == '\n' || c == 0x7f || (c < 0x20 && c != '\t')) {
                return false;
            }
        }
        return true;
    }

    /** True when {@code headers} hold exactly one Authorization, and it is {@code expected} (compared in constant time). */
    private static boolean carries(String headers, byte[] expected) {
        String found = null;
        for (String line : headers.split("\r\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).trim().toLowerCase(Locale.ROOT).equals("authorization")) {
                if (found != null) {
                    return false;
                }
                found = line.substring(colon + 1).trim();
            }
        }
        if (found == null) {
            return false;
        }
        // The scheme's case is free (RFC 9110); the token's is not.
        if (found.length() > 7 && found.substring(0, 7).equalsIgnoreCase("Bearer ")) {
            found = "Bearer " + found.substring(7);
        }
        return MessageDigest.isEqual(found.getBytes(StandardCharsets.ISO_8859_1), expected);
    }

    /** TLS over {@code plain}, with the API's host name checked against its certificate. */
    private SSLSocket tls(Socket plain) throws IOException {
        SSLSocket s = (SSLSocket) ((SSLSocketFactory) SSLSocketFactory.getDefault()).createSocket(plain, host, port, true);
        SSLParameters params = s.getSSLParameters();
        params.setEndpointIdentificationAlgorithm("HTTPS");
        s.setSSLParameters(params);
        s.startHandshake();
        return s;
    }

    /** Answers a connection past the run's share 503, once it has sent its head (closing on unread bytes resets it). */
    private void full(SocketChannel client) throws IOException {
        RunSocket.readHead(client, RunSocket.input(client), MAX_HEAD, timer, HEAD_TIMEOUT_MS);
        answer(RunSocket.output(client), 503, "too_many_connections", "This run already has " + MAX_CONNECTIONS_PER_RUN
                + " connections to Outrun's API open.", "Close some (one request per connection) before opening more.");
    }

    /** An answer in the API's own error shape ({@link ErrorBody}), so that clients read it as any other. */
    private static void answer(OutputStream out, int status, String code, String message, String guidance) throws IOException {
        byte[] body = JSON.writeValueAsBytes(ErrorBody.of(code, message, guidance));
        String reason = switch (status) {
            case 401 -> "Unauthorized";
            case 502 -> "Bad Gateway";
            case 503 -> "Service Unavailable";
            default -> "Bad Request";
        };
        out.write(("HTTP/1.1 " + status + " " + reason + "\r\nContent-Type: application/json\r\nContent-Length: "
                + body.length + (status == 401 ? "\r\nWWW-Authenticate: Bearer" : "") + "\r\nConnection: close\r\n\r\n")
                .getBytes(StandardCharsets.ISO_8859_1));
        out.write(body);
        out.flush();
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    @Override
    public void close() {
        closed = true;
        threads.shutdownNow();
        timer.shutdownNow();
    }
}
