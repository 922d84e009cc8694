package io.outrun.http;

/**
 * An answer that is an error: HTTP status, stable code, a message for people and guidance that
 * tells an agent what to do next. Thrown by handlers, written by {@link ApiServer} in the one
 * error shape {@code {"status":"error","error":{"code","message"},"guidance"}}.
 */
public final class ApiError extends RuntimeException {

    private final int httpStatus;
    private final String code;
    private final String guidance;

    public ApiError(int httpStatus, String code, String message, String guidance) {
        super(message, null, false, false);
        this.httpStatus = httpStatus;
        this.code = code;
        this.guidance = guidance;
    }

    public int httpStatus() {
        return httpStatus;
    }

    public String code() {
        return code;
    }

    public String guidance() {
        return guidance;
    }

    /** 400: {@code field} is what the caller must fix. */
    public static ApiError invalid(String field, String problem) {
        return new ApiError(400, "invalid_request", field + ": " + problem,
                "Fix the field named in the message and send the request again; GET /openapi.json describes every field.");
    }

    public static ApiError identityRequired(String why) {
        return new ApiError(401, "identity_required", why,
                "Send Authorization: Bearer <token>. An operator creates tokens with `outrun token create --owner NAME`;"
                        + " under `outrun dev` the token is in .outrun/dev-token.");
    }

    public static ApiError notFound(String id) {
        return new ApiError(404, "execution_not_found", "No execution " + id + " exists for this owner.",
                "Check the executionId: it must come from a submit made with this same token."
                        + " GET /v1/executions lists your executions.");
    }

    /** Seconds a 429 asks the caller to wait: long enough for some of its queue to start. */
    static final int QUEUE_RETRY_AFTER_S = 10;

    /** 429: the owner has as many queued executions as it may; nothing was stored. */
    public static ApiError tooManyQueued(io.outrun.owner.TooManyQueuedException e) {
        return new ApiError(429, "too_many_queued", "This owner has " + e.queued() + " queued executions; its cap is "
                + e.cap() + ". This submission was not accepted.",
                "Wait for some of your queued executions to start (retry after the Retry-After seconds), or cancel"
                        + " ones you no longer need (GET /v1/executions?status=queued lists them). Submit fewer,"
                        + " larger executions (one script that loops) rather than thousands of small ones; the"
                        + " operator sets the cap (outrun owner set --max-queued).");
    }

    /** 503: the node cannot reach its database; nothing was changed by this request. */
    public static ApiError databaseUnavailable() {
        return new ApiError(503, "database_unavailable", "This node cannot reach its database right now.",
                "Retry in a few seconds (see Retry-After). Executions already accepted are kept and resume when"
                        + " the database is back; a submit that got this answer was not accepted, so send it again"
                        + " (with the same Idempotency-Key, if you used one).");
    }
}
