package io.outrun.sandbox.docker;

import io.outrun.sandbox.Limits;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.UUID;

/**
 * A stand-in for one attempt's API bridge listener (the worker's ApiBridge, issue 31): a unix
 * socket named {@value Limits#API_SOCKET_NAME} alone in a directory of its own (0755) under
 * {@code java.io.tmpdir}, the sandbox user's (10001, mode 0600) when the tests run as root, that
 * answers every connection {@link #GREETING} and closes it.
 */
final class ApiSocketStandIn implements AutoCloseable {

    static final String GREETING = "hello-from-the-bridge";

    private final Path dir;
    private final Path socket;
    private final ServerSocketChannel server;
    private final Thread acceptor;

    private ApiSocketStandIn() throws IOException {
        dir = Files.createDirectory(Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath()
                .resolve("outrun-api-it-" + UUID.randomUUID()));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        socket = dir.resolve(Limits.API_SOCKET_NAME);
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-------"));
        try {
            Files.setAttribute(socket, "unix:uid", 10001);
            Files.setAttribute(socket, "unix:gid", 10001);
        } catch (IOException | UnsupportedOperationException | SecurityException notRoot) {
            Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-rw-rw-"));
        }
        acceptor = new Thread(() -> {
            while (true) {
                try (SocketChannel c = server.accept()) {
                    c.write(ByteBuffer.wrap((GREETING + "\n").getBytes(StandardCharsets.US_ASCII)));
                } catch (IOException e) {
                    return; // closed
                }
            }
        }, "api-socket-stand-in");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    static ApiSocketStandIn open() throws IOException {
        return new ApiSocketStandIn();
    }

    Path socket() {
        return socket;
    }

    @Override
    public void close() throws Exception {
        server.close();
        acceptor.join(5_000);
        Files.deleteIfExists(socket);
        Files.deleteIfExists(dir);
    }
}
