package io.outrun.api.http;

import io.outrun.core.owner.TooManyQueuedException;
import java.util.function.Function;

/**
 * An answer that is an error: HTTP status, stable code, a message for people and guidance that
 * tells an agent what to do next. Thrown by handlers, written by {@link ApiServer} in the one
 * error shape {@code {"status":"error","error":{"code","message"},"guidance"}}.
 */
public final class ApiError extends RuntimeException {

    private final int httpStatus;
    private final String code;
    /** The guidance in the words of each channel (HTTP routes, MCP tools, CLI commands). */
    private final Function<Channel, String> guidance;

    public ApiError(int httpStatus, String code, String message, String guidance) {
        this(httpStatus, code, message, channel -> guidance);
    }

    /** An error whose guidance names next steps, each in the words of the caller's channel. */
    public ApiError(int httpStatus, String code, String message, Function<Channel, String> guidance) {
        super(message, null, false, false);
        this.httpStatus = httpStatus;
        this.code = code;
        this.guidance = guidance;
    }

    /** The same error about a field nested in {@code parent} (a schedule's submission): its message says so. */
    ApiError inField(String parent) {
        return new ApiError(httpStatus, code, parent + "." + getMessage(), guidance);
    }

    public int httpStatus() {
        return httpStatus;
    }

    public String code() {
        return code;
    }

    public String guidance() {
        return guidance(Channel.HTTP);
    }

    public String guidance(Channel channel) {
        return guidance.apply(channel);
    }

    /** 400: {@code field} is what the caller must fix. */
    public static ApiError invalid(String field, String problem) {
        return new ApiError(400, "invalid_request", field + ": " + problem,
                ch -> "Fix the field named in the message and send the request again; " + ch.fieldsReference() + ".");
    }

    public static ApiError identityRequired(String why) {
        return new ApiError(401, "identity_required", why,
                "Send Authorization: Bearer <token>. An operator creates tokens with `outrun token create --owner NAME`;"
                        + " under `outrun dev` the token is in .outrun/dev-token.");
    }

    public static ApiError notFound(String id) {
        return new ApiError(404, "execution_not_found", "No execution " + id + " exists for this owner.",
                ch -> "Check the executionId: it must come from a submit made with this same token. "
                        + ch.list(null) + " lists your executions.");
    }

    /** Seconds a 429 asks the caller to wait: long enough for some of its queue to start. */
    static final int QUEUE_RETRY_AFTER_S = 10;

    /** 429: the owner has as many queued executions as it may; nothing was stored. */
    public static ApiError tooManyQueued(TooManyQueuedException e) {
        return new ApiError(429, "too_many_queued", "This owner has " + e.queued() + " queued executions; its cap is "
                + e.cap() + ". This submission was not accepted.",
                ch -> "Wait for some of your queued executions to start (retry after the Retry-After seconds), or cancel"
                        + " ones you no longer need (" + ch.list("queued") + " lists them). Submit fewer,"
                        + " larger executions (one script that loops) rather than thousands of small ones; the"
                        + " operator sets the cap (outrun owner set --max-queued).");
    }

    /** 503: the node cannot reach its database; nothing was changed by this request. */
    public static ApiError databaseUnavailable() {
        return new ApiError(503, "database_unavailable", "This node cannot reach its database right now.",
                ch -> "Retry in a few seconds (see Retry-After). Executions already accepted are kept and resume when"
                        + " the database is back; a submit that got this answer was not accepted, so send it again"
                        + " (with the same " + ch.idempotencyKey() + ", if you used one).");
    }

    /**
     * 503 while no primary answers among the hosts of a highly available database (the primary
     * died, no standby is promoted yet): same code as an outage, so clients retry as they do.
     */
    public static ApiError databaseNoPrimary() {
        return new ApiError(503, "database_unavailable", "No primary among this node's database hosts answers right now"
                + " (failing over?).",
                ch -> "Retry in a few seconds (see Retry-After): a failover takes seconds to a minute. Executions already"
                        + " accepted are kept and resume on the new primary; a submit that got this answer was not"
                        + " accepted, so send it again (with the same " + ch.idempotencyKey() + ", if you used one).");
    }

    /** 503: the database answers but its disk is full, so it can store nothing new. */
    public static ApiError databaseDiskFull() {
        return new ApiError(503, "database_disk_full", "This node's database cannot store anything: its disk is full."
                + " Nothing new can be queued or run until the operator frees space.",
                ch -> "Retry later (see Retry-After); a submit that got this answer was not accepted, so send it again"
                        + " (with the same " + ch.idempotencyKey() + ", if you used one). Executions already accepted"
                        + " are kept and run once the database has room. Operators: free space on the database's data"
                        + " disk (PostgreSQL logs \"No space left on device\").");
    }

    /** 503: the database answers but takes no writes (a standby, or default_transaction_read_only). */
    public static ApiError databaseReadOnly() {
        return new ApiError(503, "database_read_only", "This node's database is read-only: nothing new can be queued"
                + " or run.",
                ch -> "Retry later (see Retry-After); a submit that got this answer was not accepted, so send it again."
                        + " Operators: point the node at the primary (--db-url), not a standby.");
    }
}
