package io.outrun.client;

/**
 * The API answered with its error shape. Carries the stable {@link #code()}, the message and
 * the server's guidance (what to do next). Subclasses name the codes callers commonly branch on.
 */
public class ApiException extends OutrunException {

    private final int httpStatus;
    private final String code;
    private final String guidance;

    public ApiException(int httpStatus, String code, String message, String guidance) {
        super(message, null);
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

    static ApiException of(int httpStatus, String code, String message, String guidance) {
        return switch (code) {
            case "execution_not_found" -> new NotFound(httpStatus, code, message, guidance);
            case "identity_required" -> new IdentityRequired(httpStatus, code, message, guidance);
            case "invalid_request" -> new InvalidRequest(httpStatus, code, message, guidance);
            default -> new ApiException(httpStatus, code, message, guidance);
        };
    }

    /** 404 {@code execution_not_found}: no such execution for this owner. */
    public static final class NotFound extends ApiException {
        NotFound(int s, String c, String m, String g) {
            super(s, c, m, g);
        }
    }

    /** 401 {@code identity_required}: no token, or a bad or revoked one. */
    public static final class IdentityRequired extends ApiException {
        IdentityRequired(int s, String c, String m, String g) {
            super(s, c, m, g);
        }
    }

    /** 400 {@code invalid_request}: the message names the field. */
    public static final class InvalidRequest extends ApiException {
        InvalidRequest(int s, String c, String m, String g) {
            super(s, c, m, g);
        }
    }
}
