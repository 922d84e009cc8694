package io.outrun.api.http;

import io.javalin.http.Context;
import java.util.Locale;
import java.util.Map;

/**
 * Who reads an answer's guidance, and so which words name the next step: HTTP routes for an
 * HTTP caller, tools and their arguments for an agent over MCP, commands at a terminal. Guidance
 * is written once per meaning ({@link Guidance}, {@link ApiError}) and each reference to a next
 * step comes from here. A client says which it is with the {@value #HEADER} header (the MCP
 * tools and the CLI send theirs); without it, HTTP.
 */
public enum Channel {
    HTTP, MCP, CLI;

    /** The request header a client names its channel with: {@code http}, {@code mcp} or {@code cli}. */
    public static final String HEADER = "Outrun-Channel";

    static Channel of(Context ctx) {
        return parse(ctx.header(HEADER));
    }

    static Channel parse(String header) {
        if (header == null) {
            return HTTP;
        }
        return switch (header.strip().toLowerCase(Locale.ROOT)) {
            case "mcp" -> MCP;
            case "cli" -> CLI;
            default -> HTTP;
        };
    }

    /** Where one execution's state is shown, and its exit code and error. */
    String show(Object id) {
        return switch (this) {
            case HTTP -> "GET /v1/executions/" + id;
            case MCP -> "get_execution with executionId " + id;
            case CLI -> "outrun status " + id;
        };
    }

    /** A wait for the end, answered as soon as it comes. */
    String awaitEnd(Object id, long maxWaitMs) {
        return switch (this) {
            case HTTP -> "GET /v1/executions/" + id + "?waitMs=" + maxWaitMs + " answers as soon as it ends";
            case MCP -> "get_execution with executionId " + id + " and waitMs " + maxWaitMs + " answers as soon as it ends";
            case CLI -> "outrun status " + id + " shows where it stands";
        };
    }

    /** Following the output by cursor: only what was not seen. */
    String follow(Object id, String cursor, long maxWaitMs) {
        return switch (this) {
            case HTTP -> "GET /v1/executions/" + id + "/output?cursor=" + cursor + "&waitMs=" + maxWaitMs;
            case MCP -> "read_output with executionId " + id + " and cursor " + cursor + " (waitMs up to " + maxWaitMs + ")";
            case CLI -> "outrun logs " + id + " --cursor " + cursor + " --follow";
        };
    }

    String cancel(Object id) {
        return switch (this) {
            case HTTP -> "POST /v1/executions/" + id + "/cancel";
            case MCP -> "cancel_execution with executionId " + id;
            case CLI -> "outrun cancel " + id;
        };
    }

    String listArtifacts(Object id) {
        return switch (this) {
            case HTTP -> "GET /v1/executions/" + id + "/artifacts";
            case MCP -> "list_artifacts with executionId " + id;
            case CLI -> "outrun get " + id;
        };
    }

    String readArtifact(Object id, String name) {
        return switch (this) {
            case HTTP -> "GET /v1/executions/" + id + "/artifacts/" + name;
            case MCP -> "read_artifact with executionId " + id + " and name " + name;
            case CLI -> "outrun get " + id + " " + name;
        };
    }

    /** Listing the owner's executions, optionally of one status. */
    String list(String status) {
        return switch (this) {
            case HTTP -> "GET /v1/executions" + (status == null ? "" : "?status=" + status);
            case MCP -> "list_executions" + (status == null ? "" : " with status " + status);
            case CLI -> "outrun ls" + (status == null ? "" : " --status " + status);
        };
    }

    /** Writing to a running command's stdin. */
    String writeStdin(Object id) {
        return switch (this) {
            case HTTP -> "POST /v1/executions/" + id + "/stdin";
            case MCP -> "write_stdin with executionId " + id;
            case CLI -> "outrun send " + id + " TEXT";
        };
    }

    /** Submitting a command. */
    String submit() {
        return switch (this) {
            case HTTP -> "POST /v1/executions";
            case MCP -> "run_command";
            case CLI -> "outrun run";
        };
    }

    private static final Map<String, String> CLI_OPTIONS = Map.ofEntries(
            Map.entry("timeoutMs", "--timeout-ms"), Map.entry("maxOutputBytes", "--max-output-bytes"),
            Map.entry("maxAttempts", "--max-attempts"), Map.entry("image", "--image"), Map.entry("files", "--file"),
            Map.entry("artifacts", "--artifact"), Map.entry("workspace", "--workspace"), Map.entry("stdin", "--stdin"),
            Map.entry("tty", "--tty"), Map.entry("env", "--env"), Map.entry("workdir", "--workdir"),
            Map.entry("memoryMb", "--memory-mb"), Map.entry("cpus", "--cpus"), Map.entry("pids", "--pids"),
            Map.entry("tmpfsMb", "--tmpfs-mb"));

    /** A field of a submission as the caller sets it: a JSON field, a tool argument, a CLI option. */
    String field(String name) {
        return this == CLI ? CLI_OPTIONS.getOrDefault(name, name) : name;
    }

    /** Where every field of a request is described. */
    String fieldsReference() {
        return switch (this) {
            case HTTP -> "GET /openapi.json describes every field";
            case MCP -> "the tool's input schema lists every argument";
            case CLI -> "`outrun COMMAND --help` lists every option";
        };
    }

    /** The key that makes a retry safe. */
    String idempotencyKey() {
        return switch (this) {
            case HTTP -> "Idempotency-Key header";
            case MCP -> "idempotencyKey";
            case CLI -> "--idempotency-key";
        };
    }
}
