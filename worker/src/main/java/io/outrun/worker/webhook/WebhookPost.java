package io.outrun.worker.webhook;

import io.outrun.core.webhook.WebhookUrl;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

/**
 * One HTTP/1.1 POST to the very address the operator's list approved: the connection goes to
 * that address (no second lookup a DNS rebinding could change), while the {@code Host} header,
 * TLS server name and certificate check use the URL's host. Java's HttpClient resolves names
 * itself, hence this small client. Only the status line is read; redirects are not followed (a
 * 3xx is a failed attempt, as Standard Webhooks receivers are expected to answer 2xx).
 */
final class WebhookPost {

    private static final int MAX_STATUS_LINE = 8 * 1024;
    /** Closes a send's socket at its deadline: the only bound on a TLS handshake or record a receiver trickles. */
    private static final ScheduledExecutorService DEADLINES =
            Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "outrun-webhook-deadline");
                t.setDaemon(true);
                return t;
            });

    private WebhookPost() {
    }

    /** The receiver's HTTP status; IOException when it did not answer within {@code timeout}. */
    static int send(WebhookUrl url, InetAddress address, Map<String, String> headers, byte[] body, Duration timeout)
            throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        Socket plain = new Socket();
        AtomicBoolean cut = new AtomicBoolean();
        ScheduledFuture<?> kill = DEADLINES.schedule(() -> {
            cut.set(true);
            try {
                plain.close(); // every blocked call on it (connect, handshake, read) throws now
            } catch (IOException ignored) {
                // closing anyway
            }
        }, timeout.toMillis(), TimeUnit.MILLISECONDS);
        try (plain) { // closes the TLS layer with it
            plain.connect(new InetSocketAddress(address, url.port()), (int) Math.max(1, timeout.toMillis()));
            plain.setSoTimeout((int) Math.max(1, timeout.toMillis()));
            Socket s = url.tls() ? tls(plain, url) : plain;
            StringBuilder head = new StringBuilder()
                    .append("POST ").append(url.target()).append(" HTTP/1.1\r\n")
                    .append("Host: ").append(url.hostHeader()).append("\r\n")
                    .append("User-Agent: Outrun-Webhooks/1\r\n")
                    .append("Content-Type: application/json\r\n")
                    .append("Content-Length: ").append(body.length).append("\r\n")
                    .append("Connection: close\r\n");
            headers.forEach((k, v) -> head.append(k).append(": ").append(v).append("\r\n"));
            head.append("\r\n");
            OutputStream out = s.getOutputStream();
            out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.write(body);
            out.flush();
            return status(s.getInputStream(), deadline);
        } catch (IOException e) {
            if (cut.get()) {
                throw new IOException("the receiver did not answer within " + timeout.toSeconds() + " s", e);
            }
            throw e;
        } finally {
            kill.cancel(false);
        }
    }

    private static Socket tls(Socket plain, WebhookUrl url) throws IOException {
        SSLContext context;
        try {
            context = SSLContext.getDefault();
        } catch (NoSuchAlgorithmException e) {
            throw new IOException("no TLS here: " + e.getMessage(), e);
        }
        SSLSocket ssl = (SSLSocket) context.getSocketFactory().createSocket(plain, url.host(), url.port(), true);
        SSLParameters p = ssl.getSSLParameters();
        p.setEndpointIdentificationAlgorithm("HTTPS"); // the certificate must name the URL's host
        if (!url.host().contains(":") && !url.host().matches("[0-9.]+")) {
            p.setServerNames(List.of(new SNIHostName(url.host())));
        }
        ssl.setSSLParameters(p);
        ssl.startHandshake();
        return ssl;
    }

    /**
     * Reads "HTTP/1.1 204 No Content" and answers 204, past any interim 1xx answers (103 Early
     * Hints, 100 Continue); a receiver that trickles is bounded by the deadline.
     */
    private static int status(InputStream in, long deadline) throws IOException {
        for (int interim = 0; interim < 8; interim++) {
            int status = statusLine(line(in, deadline));
            if (status >= 200) {
                return status;
            }
            while (!line(in, deadline).isEmpty()) {
                // an interim answer's headers, up to the blank line that ends them
            }
        }
        throw new IOException("the receiver answered only interim (1xx) statuses");
    }

    private static int statusLine(String text) throws IOException {
        String[] parts = text.trim().split(" ", 3);
        if (parts.length < 2 || !parts[0].startsWith("HTTP/") || !parts[1].matches("[1-5]\\d{2}")) {
            throw new IOException("the receiver did not answer HTTP");
        }
        return Integer.parseInt(parts[1]);
    }

    /** One line without its CR LF, at most 8 KiB. */
    private static String line(InputStream in, long deadline) throws IOException {
        StringBuilder line = new StringBuilder();
        while (line.length() < MAX_STATUS_LINE) {
            if (System.nanoTime() - deadline > 0) {
                throw new IOException("the receiver did not answer in time");
            }
            int b = in.read();
            if (b < 0) {
                throw new IOException("the receiver closed the connection without an answer");
            }
            if (b == '\n') {
                int end = line.length();
                return end > 0 && line.charAt(end - 1) == '\r' ? line.substring(0, end - 1) : line.toString();
            }
            line.append((char) b);
        }
        throw new IOException("the receiver's answer has a line longer than " + MAX_STATUS_LINE + " bytes");
    }
}
