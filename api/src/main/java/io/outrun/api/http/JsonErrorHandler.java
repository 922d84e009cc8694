package io.outrun.api.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.outrun.client.wire.ErrorBody;
import io.outrun.client.wire.Json;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.handler.ErrorHandler;

/**
 * Jetty answers some requests before Javalin sees them (a malformed path or header, a URI or
 * headers over its limits) with an HTML page; this makes those answers the API's one JSON error
 * shape too, so that a client never has to parse HTML.
 */
final class JsonErrorHandler extends ErrorHandler {

    @Override
    public ByteBuffer badMessageError(int status, String reason, HttpFields.Mutable fields) {
        fields.put(HttpHeader.CONTENT_TYPE, "application/json");
        return ByteBuffer.wrap(body(status, reason));
    }

    @Override
    protected void generateAcceptableResponse(Request baseRequest, HttpServletRequest request, HttpServletResponse response,
                                              int code, String message) throws IOException {
        baseRequest.setHandled(true);
        response.setContentType("application/json");
        response.getOutputStream().write(body(code, message));
    }

    static byte[] body(int status, String reason) {
        String why = reason == null || reason.isBlank() ? "" : " (" + reason + ")";
        ErrorBody body = switch (status) {
            case 414 -> ErrorBody.of("request_too_large", "The request URI is too long" + why + ".",
                    "Send a shorter URI; identifiers and cursors are short.");
            case 431 -> ErrorBody.of("request_too_large", "The request headers are too large" + why + ".",
                    "Send smaller headers; a bearer token is under 100 characters.");
            case 413 -> ErrorBody.of("request_too_large", "The request is larger than this server accepts" + why + ".",
                    "Send a shorter request.");
            case 400 -> ErrorBody.of("invalid_request", "request: is malformed" + why,
                    "Check the path, the query and the headers (no control characters, valid percent-encoding);"
                            + " GET /openapi.json describes the API.");
            default -> status >= 500
                    ? ErrorBody.of("internal_error", "The server failed to handle the request.", "Retry later.")
                    : ErrorBody.of("http_" + status, "The request could not be handled (HTTP " + status + ")" + why + ".",
                            "GET /openapi.json describes the API.");
        };
        try {
            return Json.mapper().writeValueAsBytes(body);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }
}
