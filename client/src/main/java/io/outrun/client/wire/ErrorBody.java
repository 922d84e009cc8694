package io.outrun.client.wire;

/** Every error answer: {@code {"status":"error","error":{"code","message"},"guidance"}}. */
public record ErrorBody(String status, ErrorInfo error, String guidance) {
    public static ErrorBody of(String code, String message, String guidance) {
        return new ErrorBody("error", new ErrorInfo(code, message), guidance);
    }
}
