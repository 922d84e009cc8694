package io.outrun.worker.proxy;

import io.outrun.model.egress.EgressPolicy;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's egress proxy: the only way out of a run that asked for {@code "network": "egress"}.
 * Each such attempt gets a listener of its own ({@link #open}): a unix socket that its container
 * gets bind-mounted (its own network is still none; a relay in the container turns
 * 127.0.0.1:3128 into that socket). The proxy speaks HTTP {@code CONNECT} (HTTPS, git over
 * https, anything TLS) and plain HTTP with absolute URIs, and connects only where the
 * {@link EgressPolicy} allows, to the address it checked. Anything else is answered {@code 403}
 * with a body naming the host and the flag that allows it.
 *
 * <p>One listener per attempt, not one socket per node: a run can hold at most
 * {@link #MAX_CONNECTIONS_PER_RUN} connections (more are answered 503 at once), and when its
 * attempt ends the listener and every connection it carried are closed, so no run can starve
 * another's egress or hold anything past its end. A tunnel silent for {@link #IDLE_TIMEOUT_MS}
 * both ways is closed too.
 */
public final class EgressProxy implements AutoCloseable {

    /** Where the socket appears inside a run's container, and the relay's port there. */
    public static final String CONTAINER_SOCKET = "/run/outrun-egress.sock";
    public static final int CONTAINER_PORT = 3128;
    static final int MAX_CONNECTIONS_PER_RUN = 32;
    private static final int MAX_HEAD = 16 * 1024;
    private static final int CONNECT_TIMEOUT_MS = 10_000;
    /** A connection that has not sent its request head by then is closed. */
    private static final long HEAD_TIMEOUT_MS = 10_000;
    /** A tunnel whose far end sends nothing for this long is closed. */
    static final int IDLE_TIMEOUT_MS = 120_000;
    private static final Logger LOG = LoggerFactory.getLogger(EgressProxy.class);

    private final Path dir;
    private final EgressPolicy policy;
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "outrun-egress");
        t.setDaemon(true);
        return t;
    });
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "outrun-egress-timer");
        t.setDaemon(true);
        return t;
    });
    private final AtomicLong allowed = new AtomicLong();
    /** Refusals noted in one run's stderr before the rest are only counted. */
    static final int NOTED_REFUSALS = 20;
    private final AtomicLong refused = new AtomicLong();
    private volatile boolean closed;

    private EgressProxy(Path dir, EgressPolicy policy) throws IOException {
        this.dir = dir;
        this.policy = policy;
        RunSocket.prepareDirectory(dir);
    }

    /** A proxy whose per-attempt sockets live in {@code dir} (a path the Docker engine sees). */
    public static EgressProxy start(Path dir, EgressPolicy policy) throws IOException {
        return new EgressProxy(dir, policy);
    }

    public long allowedConnections() {
        return allowed.get();
    }

    public long refusedConnections() {
        return refused.get();
    }

    /** A listener for one attempt; closing it ends every connection it carried. */
    public final class Listener implements AutoCloseable {
        private final RunSocket socket;
        /** Where refusals are noted for the run's owner (its stderr); null until the run exists. */
        private volatile Consumer<String> notes;
        private final AtomicLong noted = new AtomicLong();

        private Listener(Path socket) throws IOException {
            this.socket = RunSocket.open(socket, MAX_CONNECTIONS_PER_RUN, threads,
                    (client, run) -> serve(client, run, this), (client, run) -> full(client));
        }

        public Path socket() {
            return socket.path();
        }

        /**
         * Refusals from now on are also told to {@code sink} (the run's stderr), the first
         * {@link #NOTED_REFUSALS} of them, then once that further ones are not.
         */
        public void noteRefusalsTo(Consumer<String> sink) {
            this.notes = sink;
        }

        void refused(String refusal) {
            Consumer<String> sink = notes;
            if (sink == null) {
                return;
            }
            long n = noted.incrementAndGet();
            if (n <= NOTED_REFUSALS) {
                sink.accept(refusal + "\n");
            } else if (n == NOTED_REFUSALS + 1) {
                sink.accept("outrun egress: further refusals are not noted here (" + NOTED_REFUSALS + " were).\n");
            }
        }

        @Override
        public void close() {
            socket.close();
        }
    }

    /** Answers a connection past the run's share 503, once it has sent its head (closing on unread bytes resets it). */
    private void full(SocketChannel client) throws IOException {
        RunSocket.readHead(client, RunSocket.input(client), MAX_HEAD, timer, HEAD_TIMEOUT_MS);
        answer(RunSocket.output(client), 503, "outrun egress: this run already has " + MAX_CONNECTIONS_PER_RUN
                + " connections open; close some before opening more.");
    }

    /** Opens the listener of one attempt, named after it. */
    public Listener open(String name) throws IOException {
        if (closed) {
            throw new IOException("the egress proxy is closed");
        }
        return new Listener(dir.resolve(name + ".sock"));
    }

    private void serve(SocketChannel channel, RunSocket open, Listener listener) throws IOException {
        InputStream in = RunSocket.input(channel);
        OutputStream out = RunSocket.output(channel);
        byte[] head = RunSocket.readHead(channel, in, MAX_HEAD, timer, HEAD_TIMEOUT_MS);
        if (head == null) {
            return; // closed before a request (the relay's readiness check)
        }
        String text = new String(head, StandardCharsets.ISO_8859_1);
        int lineEnd = text.indexOf("\r\n");
        String[] requestLine = text.substring(0, lineEnd < 0 ? text.length() : lineEnd).split(" ");
        if (requestLine.length != 3) {
            answer(out, 400, "outrun egress: not an HTTP proxy request.");
            return;
        }
        String method = requestLine[0];
        String host;
        int port;
        String originRequest = null;
        if (method.equals("CONNECT")) {
            String authority = requestLine[1];
            int colon = authority.lastIndexOf(':');
            if (colon < 0 || authority.endsWith("]")) {
                answer(out, 400, "outrun egress: CONNECT needs host:port.");
                return;
            }
            host = authority.substring(0, colon);
            port = parsePort(authority.substring(colon + 1));
            if (!HOST.matcher(host).matches()) {
                answer(out, 400, "outrun egress: not a host name or address.");
                return;
            }
        } else {
            URI uri;
            try {
                uri = URI.create(requestLine[1]);
            } catch (IllegalArgumentException e) {
                answer(out, 400, "outrun egress: not an absolute http:// URI: " + requestLine[1]);
                return;
            }
            if (!"http".equalsIgnoreCase(uri.getScheme()) || uri.getHost() == null) {
                answer(out, 400, "outrun egress: only http:// URIs and CONNECT go through this proxy, not "
                        + requestLine[1]);
                return;
            }
            host = uri.getHost();
            port = uri.getPort() < 0 ? 80 : uri.getPort();
            String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
            if (uri.getRawQuery() != null) {
                path += "?" + uri.getRawQuery();
            }
            if (!HOST.matcher(host).matches()) {
                answer(out, 400, "outrun egress: not a host name or address.");
                return;
            }
            String authority = uri.getPort() < 0 ? host : host + ":" + uri.getPort();
            originRequest = method + " " + path + " " + requestLine[2] + "\r\n" + RunSocket.forwardedHeaders(text, lineEnd, authority);
        }
        if (port <= 0) {
            answer(out, 400, "outrun egress: bad port in " + requestLine[1]);
            return;
        }
        EgressPolicy.Decision decision = policy.decide(host, port);
        if (!decision.allowed()) {
            refused.incrementAndGet();
            LOG.debug("egress refused: {}", decision.refusal()); // the host passed HOST: no control characters
            listener.refused(decision.refusal());
            answer(out, 403, decision.refusal());
            return;
        }
        Socket upstream = new Socket();
        open.track(upstream);
        try (upstream) {
            try {
                upstream.connect(new InetSocketAddress(decision.target().address(), port), CONNECT_TIMEOUT_MS);
                upstream.setSoTimeout(IDLE_TIMEOUT_MS);
            } catch (IOException e) {
                answer(out, 502, "outrun egress: could not connect to " + host + ":" + port + " (" + e.getMessage() + ").");
                return;
            }
            allowed.incrementAndGet();
            if (originRequest == null) {
                out.write("HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
            } else {
                upstream.getOutputStream().write(originRequest.getBytes(StandardCharsets.ISO_8859_1));
            }
            RunSocket.relay(in, out, upstream, threads);
        } finally {
            open.untrack(upstream);
        }
    }

    /** What a host in a request may be made of (a name, IPv4, or IPv6 in brackets); nothing that could forge a log line. */
    private static final Pattern HOST = Pattern.compile("[A-Za-z0-9._\\[\\]:-]{1,255}");

    private static int parsePort(String text) {
        try {
            int p = Integer.parseInt(text);
            return p >= 1 && p <= 65535 ? p : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static void answer(OutputStream out, int status, String message) throws IOException {
        byte[] body = (message + "\n").getBytes(StandardCharsets.UTF_8);
        String reason = switch (status) {
            case 403 -> "Forbidden";
            case 502 -> "Bad Gateway";
            default -> "Bad Request";
        };
        out.write(("HTTP/1.1 " + status + " " + reason + "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
                + body.length + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
        out.write(body);
        out.flush();
    }

    @Override
    public void close() {
        closed = true;
        threads.shutdownNow();
        timer.shutdownNow();
    }

}
