package io.outrun.worker.proxy;

import io.outrun.model.egress.EgressPolicy;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/** The proxy's own rules, over its real unix socket: per-run room, refusals that forge nothing. */
class EgressProxyTest {

    @Test
    void aRunGetsAtMostItsShareOfConnectionsAndLosesThemAtItsEnd(@TempDir Path dir) throws Exception {
        try (EgressProxy proxy = EgressProxy.start(dir.resolve("egress"), EgressPolicy.parse(List.of("example.org")))) {
            EgressProxy.Listener greedy = proxy.open("greedy");
            List<SocketChannel> held = new ArrayList<>();
            for (int i = 0; i < EgressProxy.MAX_CONNECTIONS_PER_RUN; i++) {
                held.add(connect(greedy.socket()));
            }
            assertThat(exchange(greedy.socket(), "CONNECT example.org:443 HTTP/1.1\r\n\r\n"))
                    .startsWith("HTTP/1.1 503").contains("already has " + EgressProxy.MAX_CONNECTIONS_PER_RUN);
            try (EgressProxy.Listener other = proxy.open("other")) {
                assertThat(exchange(other.socket(), "CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n"))
                        .as("another run is served").startsWith("HTTP/1.1 403");
            }
            greedy.close();
            for (SocketChannel c : held) {
                assertThat(c.read(ByteBuffer.allocate(16))).as("closed with its run").isEqualTo(-1);
                c.close();
            }
        }
    }

    @Test
    void aHostThatCouldForgeALogLineIsRefusedAsMalformed(@TempDir Path dir) throws Exception {
        try (EgressProxy proxy = EgressProxy.start(dir.resolve("egress"), EgressPolicy.parse(List.of("example.org")));
             EgressProxy.Listener run = proxy.open("run")) {
            String answer = exchange(run.socket(), "CONNECT evil\n12:00:00 WARN forged\u001b[31m:443 HTTP/1.1\r\n\r\n");
            assertThat(answer).startsWith("HTTP/1.1 400").doesNotContain("forged");
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
