package io.outrun.api.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.javalin.http.Context;
import io.outrun.core.secrets.SecretName;
import io.outrun.core.secrets.SecretStore;
import java.io.IOException;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The handlers of {@code /v1/secrets}: an owner's named values, set and deleted, listed by name
 * and times only. No answer, error or log line carries a value: an error about a value says what
 * is wrong with it, never what it is.
 */
final class SecretRoutes {

    private static final ObjectMapper JSON = new ObjectMapper();
    /** A value at its limit, JSON-escaped at worst six bytes a character, and the braces. */
    private static final int MAX_BODY_BYTES = SecretName.MAX_VALUE_BYTES * 6 + 1024;

    private final SecretStore secrets;

    SecretRoutes(SecretStore secrets) {
        this.secrets = secrets;
    }

    void put(Context ctx) {
        String owner = ApiServer.owner(ctx);
        String name = name(ctx);
        ExecutionRoutes.requireJson(ctx.header("Content-Type"));
        String value = value(BodyReader.read(ctx, MAX_BODY_BYTES));
        if (!secrets.hasKey()) {
            throw notConfigured();
        }
        SecretStore.Put done = secrets.put(owner, name, value);
        if (done.outcome() == SecretStore.Outcome.TOO_MANY) {
            throw new ApiError(409, "too_many_secrets", "You keep " + SecretName.MAX_PER_OWNER + " secrets already.",
                    "Delete ones you no longer use (DELETE /v1/secrets/{name}); GET /v1/secrets lists them.");
        }
        ApiServer.json(ctx, done.outcome() == SecretStore.Outcome.CREATED ? 201 : 200, view(done.secret()));
    }

    void list(Context ctx) {
        String owner = ApiServer.owner(ctx);
        ApiServer.json(ctx, 200, Map.of("secrets", secrets.list(owner).stream().map(SecretRoutes::view).toList()));
    }

    void delete(Context ctx) {
        String owner = ApiServer.owner(ctx);
        String name = name(ctx);
        if (!secrets.delete(owner, name)) {
            throw unknown(404, List.of(name));
        }
        ctx.status(204);
    }

    /** Names the owner has no secret called: 404 for the secret's own route, 400 for a submission naming them. */
    static ApiError unknown(int status, List<String> names) {
        boolean one = names.size() == 1;
        return new ApiError(status, "secret_not_found", "You have no secret" + (one ? " named " : "s named ")
                + String.join(", ", names) + ".",
                "Set it first: PUT /v1/secrets/" + names.get(0) + " with {\"value\": \"...\"} (or `outrun secret set "
                        + names.get(0) + "`); GET /v1/secrets lists yours.");
    }

    static ApiError notConfigured() {
        return new ApiError(503, "secrets_not_configured", "This server has no key to seal secrets with.",
                "The operator starts the API and the workers with --secrets-key-file (or OUTRUN_SECRETS_KEY), 32 random"
                        + " bytes in base64 (head -c 32 /dev/urandom | base64); `outrun dev` makes one itself.");
    }

    private static String name(Context ctx) {
        String name = ctx.pathParam("name");
        String problem = SecretName.problem(name);
        if (problem != null) {
            throw ApiError.invalid("name", problem);
        }
        return name;
    }

    private static String value(byte[] body) {
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (IOException e) {
            throw ApiError.invalid("body", "is not valid JSON; send {\"value\": \"...\"}");
        }
        if (root == null || !root.isObject()) {
            throw ApiError.invalid("body", "must be a JSON object such as {\"value\": \"...\"}");
        }
        for (Iterator<String> names = root.fieldNames(); names.hasNext(); ) {
            String field = names.next();
            if (!field.equals("value")) {
                throw ApiError.invalid(field.length() > 64 ? field.substring(0, 64) + "…" : field,
                        "is not a field of a secret (known: value)");
            }
        }
        JsonNode value = root.get("value");
        if (value != null && !value.isTextual()) {
            throw ApiError.invalid("value", "must be a string");
        }
        String problem = SecretName.valueProblem(value == null ? null : value.asText());
        if (problem != null) {
            throw ApiError.invalid("value", problem);
        }
        return value.asText();
    }

    private static Map<String, Object> view(SecretStore.Listed s) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("name", s.name());
        v.put("createdAt", s.createdAt().toString());
        v.put("updatedAt", s.updatedAt().toString());
        return v;
    }
}
