package io.outrun.core.identity;

import io.outrun.core.config.ConfigException;
import java.net.URI;

/** The fleet's issuer: the API's public URL ({@code --public-url}), as tokens and discovery name it. */
public final class Issuer {

    private Issuer() {
    }

    /** {@code url} checked (http or https, a host, no query or fragment) and without a trailing slash. */
    public static String normalize(String url) {
        if (url == null || url.isBlank()) {
            throw new ConfigException("--public-url is required to sign run tokens: the URL callers reach the API at");
        }
        return normalize(url, "--public-url");
    }

    /** As {@link #normalize(String)}, for a URL of the API given by {@code option} (a worker's --api-url too). */
    public static String normalize(String url, String option) {
        URI uri;
        try {
            uri = URI.create(url.strip());
        } catch (IllegalArgumentException e) {
            throw new ConfigException(option + " is not a URL: " + url);
        }
        if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null
                || uri.getRawQuery() != null || uri.getRawFragment() != null) {
            throw new ConfigException(option + " must be an http(s) URL with a host and no query, got: " + url);
        }
        String text = uri.toString();
        while (text.endsWith("/")) {
            text = text.substring(0, text.length() - 1);
        }
        return text;
    }
}
