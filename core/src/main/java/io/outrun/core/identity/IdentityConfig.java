package io.outrun.core.identity;

import io.outrun.core.config.ConfigException;

/**
 * The API's settings for run identities (issue 31).
 *
 * @param publicUrl        the URL callers reach the API at ({@code --public-url}): the issuer of
 *                         run tokens and the base of the discovery document; null: this node's own
 *                         {@code http://host:port}
 * @param defaultAudience  the {@code aud} of an identity token whose submission names none
 *                         ({@code --identity-audience}); null: the public URL
 * @param maxChildDepth    how deep children may nest ({@code --max-child-depth}, default
 *                         {@value #DEFAULT_MAX_CHILD_DEPTH}); 0: runs may not submit children
 */
public record IdentityConfig(String publicUrl, String defaultAudience, int maxChildDepth) {

    public static final int DEFAULT_MAX_CHILD_DEPTH = 3;
    public static final IdentityConfig DEFAULTS = new IdentityConfig(null, null, DEFAULT_MAX_CHILD_DEPTH);

    public IdentityConfig {
        if (publicUrl != null) {
            publicUrl = Issuer.normalize(publicUrl);
        }
        if (defaultAudience != null && (defaultAudience.isBlank() || defaultAudience.length() > 200)) {
            throw new ConfigException("--identity-audience must be 1 to 200 characters, got: " + defaultAudience);
        }
        if (maxChildDepth < 0 || maxChildDepth > 100) {
            throw new ConfigException("--max-child-depth must be between 0 and 100, got: " + maxChildDepth);
        }
    }

    public IdentityConfig withPublicUrl(String value) {
        return new IdentityConfig(value, defaultAudience, maxChildDepth);
    }
}
