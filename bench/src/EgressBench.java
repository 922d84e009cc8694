import com.sun.net.httpserver.HttpServer;
import io.outrun.model.egress.EgressPolicy;
import io.outrun.worker.proxy.EgressProxy;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * The egress proxy's cost per connection: one HTTP GET on a new connection through the node's
 * proxy (its unix socket, as a run's relay uses it; the policy decides, the proxy connects and
 * relays), beside the same GET on a new direct TCP connection to the same loopback server,
 * interleaved. The relay inside the container (socat) is not in either figure.
 */
final class EgressBench {

    private EgressBench() {
    }

    static List<Support.Result> run(int requests) throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        byte[] body = "x".repeat(1024).getBytes(StandardCharsets.UTF_8);
        server.createContext("/", x -> {
            x.sendResponseHeaders(200, body.length);
            x.getResponseBody().write(body);
            x.close();
        });
        server.start();
        Path dir = Files.createTempDirectory("outrun-egress-bench");
        int port = server.getAddress().getPort();
        try (EgressProxy proxy = EgressProxy.start(dir.resolve("egress"), EgressPolicy.parse(List.of("127.0.0.1:" + port)));
             EgressProxy.Listener run = proxy.open("bench")) {
            String viaProxy = "GET http://127.0.0.1:" + port + "/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
            String direct = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
            long[] ours = new long[requests];
            long[] base = new long[requests];
            for (int i = 0; i < 50; i++) { // warm-up
                throughProxy(run.socket(), viaProxy);
                directly(port, direct);
            }
            for (int i = 0; i < requests; i++) {
                long t0 = System.nanoTime();
                throughProxy(run.socket(), viaProxy);
                long t1 = System.nanoTime();
                directly(port, direct);
                long t2 = System.nanoTime();
                ours[i] = t1 - t0;
                base[i] = t2 - t1;
            }
            Arrays.sort(ours);
            Arrays.sort(base);
            double p50 = ours[requests / 2] / 1e6;
            double b50 = base[requests / 2] / 1e6;
            double added = p50 - b50;
            return List.of(Support.Result.of("egress_connection_p50", p50, "ms", b50, "", null,
                    String.format("one GET on a new connection through the egress proxy vs direct TCP, %d interleaved;"
                            + " the proxy adds %.2f ms per connection (p99 %.2f vs %.2f ms)", requests, added,
                            ours[requests * 99 / 100] / 1e6, base[requests * 99 / 100] / 1e6)));
        } finally {
            server.stop(0);
        }
    }

    private static void throughProxy(Path socket, String request) throws IOException {
        try (SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            c.connect(UnixDomainSocketAddress.of(socket));
            c.write(ByteBuffer.wrap(request.getBytes(StandardCharsets.ISO_8859_1)));
            ByteBuffer buf = ByteBuffer.allocate(8192);
            int total = 0;
            while (c.read(buf) >= 0) {
                total += buf.position();
                buf.clear();
            }
            if (total < 1024) {
                throw new IOException("short answer through the proxy: " + total + " bytes");
            }
        }
    }

    private static void directly(int port, String request) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            OutputStream out = s.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = s.getInputStream();
            if (in.readAllBytes().length < 1024) {
                throw new IOException("short direct answer");
            }
        }
    }
}
