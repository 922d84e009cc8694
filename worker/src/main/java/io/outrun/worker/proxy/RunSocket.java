package io.outrun.worker.proxy;

import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One attempt's unix socket on the node, which its container gets bind-mounted (the egress
 * proxy's, the API bridge's): owned by the sandbox's user, so that only the run's container can
 * connect; at most {@code max} connections at once (one more is handed to the {@code full}
 * handler, which answers and closes it); and closing it ends every connection it carried, and
 * every far end a handler {@link #track}ed, so nothing of a run outlives its attempt.
 */
public final class RunSocket implements AutoCloseable {

    /** What serves one accepted connection, on a thread of its own; the connection is closed after. */
    public interface Handler {
        void serve(SocketChannel client, RunSocket socket) throws IOException;
    }

    /** The uid of the sandbox's user: the only one the socket is opened to. */
    private static final int SANDBOX_UID = 10001;
    private static final Logger LOG = LoggerFactory.getLogger(RunSocket.class);

    private final Path path;
    private final ServerSocketChannel server;
    private final Semaphore room;
    private final ExecutorService threads;
    private final Handler serve;
    private final Handler full;
    private final Set<Closeable> open = ConcurrentHashMap.newKeySet();
    private volatile boolean ended;

    private RunSocket(Path path, int max, ExecutorService threads, Handler serve, Handler full, boolean sandboxUser)
            throws IOException {
        this.path = path;
        this.room = new Semaphore(max);
        this.threads = threads;
        this.serve = serve;
        this.full = full;
        Files.deleteIfExists(path); // a stale socket of an earlier process of this node
        this.server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(path));
        Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-------"));
        if (!sandboxUser) {
            // A host process (bubblewrap) runs as the node's own user: the node's own socket it is.
            threads.execute(this::acceptLoop);
            return;
        }
        try {
            Files.setAttribute(path, "unix:uid", SANDBOX_UID);
            Files.setAttribute(path, "unix:gid", SANDBOX_UID);
        } catch (IOException | UnsupportedOperationException | SecurityException notRoot) {
            // Not root: the container's user cannot be made the owner; open it to it instead
            // (the directory keeps other host users out).
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-rw-rw-"));
        }
        threads.execute(this::acceptLoop);
    }

    /**
     * Binds {@code path} and serves each connection with {@code serve} on {@code threads}, or with
     * {@code full} past {@code max} open at once.
     */
    public static RunSocket open(Path path, int max, ExecutorService threads, Handler serve, Handler full)
            throws IOException {
        return new RunSocket(path, max, threads, serve, full, true);
    }

    /** As {@link #open}, for runs of the node's own user (host processes): the socket stays the node's, 0600. */
    public static RunSocket openForNodeUser(Path path, int max, ExecutorService threads, Handler serve, Handler full)
            throws IOException {
        return new RunSocket(path, max, threads, serve, full, false);
    }

    /**
     * Makes {@code dir} for runs' sockets: only the node (and the engine, as root) reaches them on
     * the host; a container sees only its own, bind-mounted as a file.
     */
    public static void prepareDirectory(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
    }

    public Path path() {
        return path;
    }

    /** {@code c} (a connection's far end) is closed with this socket, unless {@link #untrack}ed first. */
    public void track(Closeable c) {
        open.add(c);
        if (ended) {
            closeQuietly(c); // closed meanwhile: the far end must not outlive it
        }
    }

    public void untrack(Closeable c) {
        open.remove(c);
    }

    private void acceptLoop() {
        while (!ended) {
            SocketChannel client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return; // closed at the attempt's end
            }
            boolean inRoom = room.tryAcquire();
            Handler handler = inRoom ? serve : full;
            open.add(client);
            try {
                threads.execute(() -> {
                    try (client) {
                        handler.serve(client, this);
                    } catch (IOException e) {
                        // The run or the far end went away: nothing to answer.
                    } finally {
                        open.remove(client);
                        if (inRoom) {
                            room.release();
                        }
                    }
                });
            } catch (RuntimeException e) {
                open.remove(client);
                if (inRoom) {
                    room.release();
                }
                closeQuietly(client);
            }
        }
    }

    @Override
    public void close() {
        ended = true;
        closeQuietly(server);
        for (Closeable c : open) {
            closeQuietly(c);
        }
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            LOG.debug("cannot remove run socket {}: {}", path, e.toString());
        }
    }

    /**
     * The request head of {@code client} up to its blank line, at most {@code max} bytes; null when
     * the client closed first (a relay's readiness check). A client that has not sent it within
     * {@code timeoutMs} is closed.
     */
    public static byte[] readHead(SocketChannel client, InputStream in, int max, ScheduledExecutorService timer,
                                  long timeoutMs) throws IOException {
        var guard = timer.schedule(() -> closeQuietly(client), timeoutMs, TimeUnit.MILLISECONDS);
        try {
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            int matched = 0;
            while (head.size() < max) {
                int b = in.read();
                if (b < 0) {
                    return head.size() == 0 ? null : head.toByteArray();
                }
                head.write(b);
                matched = (b == "\r\n\r\n".charAt(matched)) ? matched + 1 : (b == '\r' ? 1 : 0);
                if (matched == 4) {
                    return head.toByteArray();
                }
            }
            return head.toByteArray();
        } finally {
            guard.cancel(false);
        }
    }

    /**
     * Copies both ways until the far end is done sending: the run's bytes to {@code toFar} (on
     * {@code threads}; the far end's output is shut when the run's end), the far end's to the run.
     */
    public static void relay(InputStream fromRun, OutputStream toRun, Socket far, ExecutorService threads)
            throws IOException {
        InputStream fromFar = far.getInputStream();
        OutputStream toFar = far.getOutputStream();
        var up = threads.submit(() -> {
            try {
                fromRun.transferTo(toFar);
                far.shutdownOutput();
            } catch (IOException | UnsupportedOperationException ignored) {
                // Either side closed (a TLS socket cannot half-close: its far end answers anyway).
            }
        });
        try {
            fromFar.transferTo(toRun);
        } finally {
            up.cancel(true);
        }
    }

    /**
     * The headers of a request {@code head} (its request line ends at {@code lineEnd}) to send on:
     * proxy headers dropped, one request per connection, and {@code Host} set to
     * {@code authority}, the one checked or served (a different Host would reach another site
     * behind the same address).
     */
    public static String forwardedHeaders(String head, int lineEnd, String authority) {
        StringBuilder b = new StringBuilder("Host: ").append(authority).append("\r\n");
        for (String line : head.substring(lineEnd + 2).split("\r\n")) {
            String lower = line.toLowerCase(Locale.ROOT);
            if (line.isEmpty() || lower.startsWith("proxy-") || lower.startsWith("connection:") || lower.startsWith("keep-alive:")
                    || lower.startsWith("host:")) {
                continue;
            }
            b.append(line).append("\r\n");
        }
        return b.append("Connection: close\r\n\r\n").toString();
    }

    /*
     * Not Channels.newInputStream/newOutputStream: those take the channel's blocking lock for
     * every read and write, so a relay's write would wait for its read forever.
     */

    public static InputStream input(SocketChannel c) {
        return new InputStream() {
            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                int n = read(one, 0, 1);
                return n < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                return len == 0 ? 0 : c.read(ByteBuffer.wrap(b, off, len));
            }
        };
    }

    public static OutputStream output(SocketChannel c) {
        return new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                ByteBuffer buf = ByteBuffer.wrap(b, off, len);
                while (buf.hasRemaining()) {
                    c.write(buf);
                }
            }
        };
    }

    public static void closeQuietly(Closeable c) {
        try {
            c.close();
        } catch (IOException ignored) {
            // Closing anyway.
        }
    }
}
