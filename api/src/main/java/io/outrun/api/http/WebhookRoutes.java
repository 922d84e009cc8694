package io.outrun.api.http;

import io.javalin.http.Context;
import io.outrun.core.secrets.SecretsKey;
import io.outrun.core.store.WebhookStore;
import io.outrun.core.webhook.WebhookSignature;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * {@code POST /v1/webhook-secret}: makes (or rotates) the owner's webhook signing secret and
 * answers it once; it is kept sealed under the operator's key and never shown again. Every
 * webhook of the owner is signed with it from the next attempt on.
 */
final class WebhookRoutes {

    private final WebhookStore store;
    private final SecretsKey key;

    WebhookRoutes(WebhookStore store, SecretsKey key) {
        this.store = store;
        this.key = key;
    }

    void rotateSecret(Context ctx) {
        String owner = ApiServer.owner(ctx);
        if (key == null) {
            throw SecretRoutes.notConfigured();
        }
        String secret = WebhookSignature.newSecret();
        SecretsKey.Sealed sealed = key.seal(owner, WebhookStore.SECRET_NAME, secret);
        boolean rotated = store.putSecret(owner, new WebhookStore.Sealed(sealed.nonce(), sealed.ciphertext(), sealed.keyId()));
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("secret", secret);
        body.put("rotated", rotated);
        body.put("guidance", "Keep this secret: it is shown only now. Verify each webhook's `webhook-signature` header"
                + " with it (Standard Webhooks: v1,base64 HMAC-SHA256 of webhook-id.webhook-timestamp.body, keyed with the"
                + " bytes after whsec_). POST /v1/webhook-secret again to rotate it.");
        ApiServer.json(ctx, rotated ? 200 : 201, body);
    }

    /** A submission with a webhook needs a secret to sign it with: refused without one. */
    void requireSecret(String owner) {
        if (key == null) {
            throw SecretRoutes.notConfigured();
        }
        if (!store.hasSecret(owner)) {
            throw new ApiError(400, "webhook_secret_missing", "webhook: you have no webhook signing secret yet, so"
                    + " its receiver could not tell Outrun's events from anyone's.",
                    "Make one first: POST /v1/webhook-secret (answered once; keep it), then submit again.");
        }
    }
}
