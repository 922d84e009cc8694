package io.outrun.sandbox.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outrun.sandbox.Limits;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the warm pool relies on to give a pooled container its run's API socket, without Docker:
 * a hard link to a bound unix socket, made after the bind, leads a connect(2) to that very
 * listener (a unix socket is found by its inode); and which runs fit the pool now that every
 * run of a node with an API bridge has a socket of its own.
 */
class WarmPoolApiSocketTest {

    @Test
    void aConnectThroughAHardLinkReachesTheListenerBoundAtTheOriginal(@TempDir Path leaseDir) throws Exception {
        Path attempt = Files.createDirectories(leaseDir.resolve("api-node").resolve("run-1"));
        Path socket = attempt.resolve(Limits.API_SOCKET_NAME);
        Path poolDir = Files.createDirectory(leaseDir.resolve("pool-1" + WarmPool.API_DIR_SUFFIX));
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(socket));
            WarmPool.linkApiSocket(poolDir, socket);
            Path link = poolDir.resolve(Limits.API_SOCKET_NAME);
            assertThat(Files.isSameFile(link, socket)).isTrue();
            try (SocketChannel client = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                client.connect(UnixDomainSocketAddress.of(link));
                try (SocketChannel accepted = server.accept()) {
                    client.write(ByteBuffer.wrap("ping".getBytes(StandardCharsets.US_ASCII)));
                    ByteBuffer got = ByteBuffer.allocate(4);
                    while (got.hasRemaining() && accepted.read(got) >= 0) {
                        // reading the four bytes
                    }
                    assertThat(new String(got.array(), StandardCharsets.US_ASCII)).isEqualTo("ping");
                }
            }
            // A directory already holding a socket (it serves one run only) refuses another: the
            // take falls back to a fresh container.
            assertThatThrownBy(() -> WarmPool.linkApiSocket(poolDir, socket)).isInstanceOf(FileAlreadyExistsException.class);
        }
        Files.delete(socket); // the listener's close
        try (SocketChannel client = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            assertThatThrownBy(() -> client.connect(UnixDomainSocketAddress.of(poolDir.resolve(Limits.API_SOCKET_NAME))))
                    .as("the link leads nowhere once the listener closed").isInstanceOf(IOException.class);
        }
        Path leaseFile = Files.createFile(leaseDir.resolve("pool-1"));
        WarmPool.deleteFiles(new WarmPool.Warm(null, leaseFile, poolDir));
        assertThat(poolDir).doesNotExist();
        assertThat(leaseFile).doesNotExist();
        assertThat(leaseDir.resolve("api-node")).isDirectory();
    }

    @Test
    void aRunWithAnApiSocketUnderTheLeaseDirFitsAndAnEgressRunStillDoesNot(@TempDir Path leaseDir) {
        WarmPool pool = new WarmPool(null, new ContainerRecipe.Owner("node", null),
                new Sandbox.NodeShape("node/1", Limits.DEFAULTS, 2, leaseDir), 1, List.of("image"), image -> List.of(), false);
        try {
            RunSpec plain = new RunSpec(UUID.randomUUID(), 1, 1, "node", "node/1", "true", null, null, Map.of(),
                    Duration.ofSeconds(10), 4096, Limits.DEFAULTS, leaseDir.resolve("run.1"));
            Path socket = leaseDir.resolve("api-node").resolve("run-1").resolve(Limits.API_SOCKET_NAME);
            assertThat(pool.fits(plain, "image")).isTrue();
            assertThat(pool.fits(plain.withLimits(Limits.DEFAULTS.withApiSocket(socket)), "image")).isTrue();
            assertThat(pool.fits(plain.withLimits(Limits.DEFAULTS.withApiSocket(Path.of("/elsewhere/run-1/api.sock"))), "image"))
                    .as("a hard link needs the lease directory's file system").isFalse();
            assertThat(pool.fits(plain.withLimits(Limits.DEFAULTS.withEgressSocket(leaseDir.resolve("egress.sock"))
                    .withApiSocket(socket)), "image")).isFalse();
            assertThat(pool.fits(plain.withLimits(new Limits(256L << 20, Limits.DEFAULTS.nanoCpus(), Limits.DEFAULTS.pids(),
                    Limits.DEFAULTS.tmpfsBytes(), null).withApiSocket(socket)), "image")).isFalse();
            assertThatThrownBy(() -> Limits.DEFAULTS.withApiSocket(leaseDir.resolve("run-1.sock")))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(Limits.API_SOCKET_NAME);
        } finally {
            pool.close();
        }
    }
}
