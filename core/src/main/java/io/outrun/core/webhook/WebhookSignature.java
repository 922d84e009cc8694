package io.outrun.core.webhook;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Standard Webhooks 1.0 signing: an owner's secret is {@code whsec_} and the base64 of 32 random
 * bytes; an event is signed {@code v1,<base64 HMAC-SHA256(key, id + "." + timestamp + "." + body)>}
 * where the key is the secret's bytes. Any Standard Webhooks library verifies it.
 */
public final class WebhookSignature {

    public static final String PREFIX = "whsec_";
    private static final SecureRandom RANDOM = new SecureRandom();

    private WebhookSignature() {
    }

    /** A new secret, as its owner is given it once. */
    public static String newSecret() {
        byte[] key = new byte[32];
        RANDOM.nextBytes(key);
        return PREFIX + Base64.getEncoder().encodeToString(key);
    }

    /** The {@code webhook-signature} header of one attempt. */
    public static String sign(String secret, String id, long timestampSeconds, byte[] body) {
        if (secret == null || !secret.startsWith(PREFIX)) {
            throw new IllegalArgumentException("not a webhook secret (whsec_…)");
        }
        byte[] key = Base64.getDecoder().decode(secret.substring(PREFIX.length()));
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update((id + "." + timestampSeconds + ".").getBytes(StandardCharsets.UTF_8));
            return "v1," + Base64.getEncoder().encodeToString(mac.doFinal(body));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }
}
