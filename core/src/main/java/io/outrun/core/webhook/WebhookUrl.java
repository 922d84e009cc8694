package io.outrun.core.webhook;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;

/**
 * A completion webhook's destination, checked in shape: {@code http} or {@code https}, a host, no
 * user info or fragment, at most 2048 characters. Where it may go is the operator's list's call
 * ({@code --webhook-allow}), asked at submit and again before every attempt.
 */
public record WebhookUrl(URI uri, String host, int port, boolean tls) {

    public static final int MAX_LENGTH = 2048;

    /** Parses {@code text}; IllegalArgumentException says what is wrong with it. */
    public static WebhookUrl parse(String text) {
        if (text == null || text.isEmpty() || text.length() > MAX_LENGTH) {
            throw new IllegalArgumentException("must be an http(s) URL of 1-" + MAX_LENGTH + " characters");
        }
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("is not a valid URL (" + e.getReason() + ")");
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("https") && !scheme.equals("http")) {
            throw new IllegalArgumentException("must start with https:// (or http://)");
        }
        if (uri.getHost() == null || uri.getHost().isEmpty()) {
            throw new IllegalArgumentException("must name a host (https://host[:port]/path)");
        }
        if (uri.getRawUserInfo() != null) {
            throw new IllegalArgumentException("must not carry a user or password: the receiver checks the signature");
        }
        if (uri.getRawFragment() != null) {
            throw new IllegalArgumentException("must not have a #fragment");
        }
        boolean tls = scheme.equals("https");
        int port = uri.getPort() == -1 ? (tls ? 443 : 80) : uri.getPort();
        String host = uri.getHost();
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        return new WebhookUrl(uri, host.toLowerCase(Locale.ROOT), port, tls);
    }

    /** The request target: path and query as given ({@code /} when empty). */
    public String target() {
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        return uri.getRawQuery() == null ? path : path + "?" + uri.getRawQuery();
    }

    /** The Host header: the host as written, and the port unless it is the scheme's. */
    public String hostHeader() {
        String h = host.contains(":") ? "[" + host + "]" : host;
        return port == (tls ? 443 : 80) ? h : h + ":" + port;
    }
}
