package io.outrun.worker.webhook;

import io.outrun.core.webhook.WebhookUrl;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The webhook client against local receivers that misbehave: its bound holds, interim answers are skipped. */
class WebhookPostTest {

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void aReceiverThatTricklesItsTlsHandshakeIsCutAtTheDeadline() throws Exception {
        java.util.concurrent.CountDownLatch over = new java.util.concurrent.CountDownLatch(1);
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CompletableFuture.runAsync(() -> {
                try (Socket s = server.accept(); OutputStream out = s.getOutputStream()) {
                    out.write(new byte[] {0x16, 0x03, 0x03, 0x40, 0x00}); // a handshake record of 16 KiB, never sent
                    // One byte every 500 ms (under any read timeout), until the test is over.
                    while (!over.await(500, TimeUnit.MILLISECONDS)) {
                        out.write(0);
                        out.flush();
                    }
                } catch (Exception ignored) {
                    // the client hung up: what the test wants
                }
            });
            WebhookUrl url = WebhookUrl.parse("https://127.0.0.1:" + server.getLocalPort() + "/");
            long start = System.nanoTime();
            assertThatThrownBy(() -> WebhookPost.send(url, InetAddress.getLoopbackAddress(), Map.of(), new byte[] {'{', '}'},
                    Duration.ofSeconds(2))).hasMessageContaining("did not answer within 2 s");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
        } finally {
            over.countDown();
        }
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void interimAnswersAreSkippedAndTheFinalStatusCounts() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CompletableFuture<String> request = CompletableFuture.supplyAsync(() -> {
                try (Socket s = server.accept(); InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
                    byte[] buf = new byte[4096];
                    int n = in.read(buf);
                    out.write(("HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n"
                            + "HTTP/1.1 204 No Content\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                    return new String(buf, 0, n, StandardCharsets.ISO_8859_1);
                } catch (Exception e) {
                    return e.toString();
                }
            });
            WebhookUrl url = WebhookUrl.parse("http://127.0.0.1:" + server.getLocalPort() + "/in?x=1");
            int status = WebhookPost.send(url, InetAddress.getLoopbackAddress(), Map.of("webhook-id", "msg_1"),
                    "{}".getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(5));
            assertThat(status).isEqualTo(204);
            assertThat(request.get(5, TimeUnit.SECONDS)).startsWith("POST /in?x=1 HTTP/1.1\r\n")
                    .contains("Host: 127.0.0.1:" + server.getLocalPort() + "\r\n", "webhook-id: msg_1\r\n",
                            "Content-Length: 2\r\n");
        }
    }
}
