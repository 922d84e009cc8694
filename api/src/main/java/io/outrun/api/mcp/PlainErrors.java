package io.outrun.api.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.outrun.client.wire.Json;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;

/**
 * The MCP SDK's transport answers a bad request (a body that is not JSON-RPC, a missing Accept,
 * an unknown message type) by serializing its {@code McpError} exception whole: its Java class,
 * cause and some 40 stack frames go to the client. Such an answer is held here and replaced by
 * the JSON-RPC error it stands for: {@code {"jsonrpc":"2.0","id":null,"error":{"code","message"}}}.
 * Answers below 400 (results, event streams) pass untouched.
 */
final class PlainErrors extends HttpServletResponseWrapper {

    private StringWriter held;
    private PrintWriter heldWriter;

    PlainErrors(HttpServletResponse response) {
        super(response);
    }

    @Override
    public PrintWriter getWriter() throws IOException {
        if (getStatus() < 400) {
            return super.getWriter();
        }
        if (heldWriter == null) {
            held = new StringWriter();
            heldWriter = new PrintWriter(held);
        }
        return heldWriter;
    }

    /** Writes the held error, if any, as a plain JSON-RPC error; call once the SDK is done. */
    void finish() throws IOException {
        if (heldWriter == null) {
            return;
        }
        heldWriter.flush();
        int code = -32603;
        String message = "Internal error";
        try {
            JsonNode error = Json.mapper().readTree(held.toString());
            JsonNode rpc = error.path("jsonRpcError");
            code = rpc.path("code").asInt(error.path("code").asInt(code));
            message = rpc.path("message").asText(error.path("message").asText(message));
        } catch (IOException | RuntimeException notJson) {
            // Keep the generic code and message: never the held text itself.
        }
        if (message.contains("java.") || message.contains("Cannot deserialize") || message.contains("[Source")) {
            // A parser's words about Java types: say what a client can act on instead.
            message = "Invalid message format: the body must be a JSON-RPC 2.0 message (an object with jsonrpc \"2.0\","
                    + " a method, and an id for a request) or a batch of them";
        }
        ObjectNode answer = Json.mapper().createObjectNode();
        answer.put("jsonrpc", "2.0");
        answer.putNull("id");
        answer.putObject("error").put("code", code).put("message", message);
        HttpServletResponse response = (HttpServletResponse) getResponse();
        response.setContentType("application/json");
        response.setCharacterEncoding("UTF-8");
        PrintWriter out = response.getWriter();
        out.write(answer.toString());
        out.flush();
    }
}
