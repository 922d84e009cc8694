package io.outrun.api.mcp;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.ServerCapabilities;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import io.outrun.client.ApiException;
import io.outrun.client.OutrunClient;
import io.outrun.client.UnreachableException;
import io.outrun.client.wire.ExecutionPage;
import io.outrun.client.wire.ExecutionSummary;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.Json;
import io.outrun.client.wire.OutputChunk;
import io.outrun.client.wire.StdinWritten;
import io.outrun.client.wire.StreamDelta;
import io.outrun.client.wire.StreamText;
import io.outrun.client.wire.SubmitRequest;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Outrun as MCP tools: run_command, get_execution, read_output, cancel_execution and
 * list_executions, each answering JSON text with {@code executionId}, {@code status}, an output
 * {@code cursor} and {@code guidance} that names the next tool call. They work through the HTTP
 * API with the caller's own token ({@code clients} picks the client for each call), so the
 * stdio server ({@code outrun mcp}) and the API node's {@code /mcp} share one behaviour, one
 * auth and one owner scoping. API errors come back as tool errors with the API's stable codes.
 */
public final class OutrunTools {

    private static final Logger LOG = LoggerFactory.getLogger(OutrunTools.class);

    /** How long a foreground run_command waits by default before handing back the id (Codex's yield: 10 s). */
    static final long FOREGROUND_WAIT_MS = 10_000;
    /** Characters of each stream one result carries (Claude Code's tool output limit is 30,000). */
    static final int TEXT_LIMIT = 30_000;
    /** Characters of each stream in get_execution's preview of a finished execution. */
    static final int PREVIEW_LIMIT = 4_000;
    /** How long cancel_execution waits for the command to be gone. */
    static final long CANCEL_WAIT_MS = 45_000; // under the HTTP connector's idle timeout (maxWaitMs + 30 s)

    /**
     * The arguments of run_command that are no field of a submission: whether to wait, and the
     * key the HTTP API takes as a header. The others are the submission's fields
     * ({@code SubmissionField}) that it offers.
     */
    public static final List<String> RUN_COMMAND_OWN = List.of("background", "idempotencyKey");

    /** What the server tells a host about all the tools at once. */
    public static final String INSTRUCTIONS = """
            Outrun runs shell commands durably in a sandbox on a fleet of workers: a command keeps running when \
            your turn or your connection ends, survives a worker crash (it is re-run from the start, unless \
            maxAttempts is 1), and its state and output stay readable by executionId. Use run_command for \
            anything long (builds, test suites, data jobs, downloads); with background=true it answers at once. \
            Do not wait idle: continue other work and come back with read_output (only new output, from the \
            cursor you were given) or get_execution. cancel_execution stops a command; list_executions finds \
            yours again. Files written in the sandbox vanish with it: send inputs with files, keep results with \
            artifacts (list_artifacts, read_artifact; a long output is kept whole there as stdout and stderr), \
            and carry a workdir from run to run with workspace.""";

    private final Function<McpSyncServerExchange, OutrunClient> clients;
    private final McpJsonMapper mapper;

    /** {@code clients} gives the API client to use for one call (the token of whoever made it). */
    public OutrunTools(Function<McpSyncServerExchange, OutrunClient> clients, McpJsonMapper mapper) {
        this.clients = clients;
        this.mapper = mapper;
    }

    /**
     * The MCP server with these tools on {@code transport}'s spec. Inputs are checked by the tools
     * themselves, not by the SDK's schema validator, so a bad argument answers with the API's
     * code ({@code invalid_request}) and a message that names it, like every other error.
     */
    public McpSyncServer serve(McpServer.SyncSpecification<?> transport, String version) {
        return transport.serverInfo("outrun", version)
                .instructions(INSTRUCTIONS)
                .capabilities(ServerCapabilities.builder().tools(false).build())
                .validateToolInputs(false)
                .tools(specifications())
                .build();
    }

    public List<SyncToolSpecification> specifications() {
        return List.of(
                spec(ToolSchemas.RUN_COMMAND, this::runCommand),
                spec(ToolSchemas.GET_EXECUTION, this::getExecution),
                spec(ToolSchemas.READ_OUTPUT, this::readOutput),
                spec(ToolSchemas.WRITE_STDIN, this::writeStdin),
                spec(ToolSchemas.CANCEL_EXECUTION, this::cancel),
                spec(ToolSchemas.LIST_EXECUTIONS, this::list),
                spec(ToolSchemas.LIST_ARTIFACTS, ArtifactTools::list),
                spec(ToolSchemas.READ_ARTIFACT, ArtifactTools::read));
    }

    private SyncToolSpecification spec(ToolSchemas.ToolText text, BiFunction<OutrunClient, ToolArgs, ObjectNode> handler) {
        String name = text.name();
        Tool tool = Tool.builder().name(name).description(text.description()).inputSchema(mapper, text.schema())
                .annotations(text.annotations()).build();
        return SyncToolSpecification.builder().tool(tool).callHandler((exchange, request) -> {
            try {
                // The API words its guidance in tool calls for this client (Outrun-Channel: mcp).
                ObjectNode answer = handler.apply(clients.apply(exchange).withChannel("mcp"),
                        new ToolArgs(request.arguments()));
                return CallToolResult.builder().addTextContent(answer.toString()).isError(false).build();
            } catch (ApiException e) {
                return error(e.code(), e.getMessage(), e.guidance());
            } catch (ToolArgs.InvalidArgument e) {
                return error("invalid_request", e.getMessage(), "Fix the argument named in the message; the tool's"
                        + " input schema lists them all.");
            } catch (UnreachableException e) {
                return error("api_unreachable", e.getMessage(), "The Outrun API did not answer; retry shortly. Executions"
                        + " already submitted keep running.");
            } catch (RuntimeException e) {
                LOG.error("tool {} failed", name, e);
                return error("internal_error", "The tool failed: " + e, "Retry shortly; if it repeats, tell the operator.");
            }
        }).build();
    }

    private static CallToolResult error(String code, String message, String guidance) {
        ObjectNode body = Json.mapper().createObjectNode();
        body.put("status", "error");
        body.putObject("error").put("code", code).put("message", message);
        body.put("guidance", guidance);
        return CallToolResult.builder().addTextContent(body.toString()).isError(true).build();
    }

    // --- the tools ----------------------------------------------------------------------------

    private ObjectNode runCommand(OutrunClient client, ToolArgs args) {
        boolean background = args.bool("background", false);
        SubmitRequest request = RunCommandRequest.from(args, background, FOREGROUND_WAIT_MS);
        String key = RunCommandRequest.idempotencyKey(args);
        ExecutionView submitted = client.submit(request, key, "none");
        if (background) {
            ObjectNode answer = state(submitted);
            answer.put("cursor", submitted.cursor());
            answer.put("guidance", "Started in the background. Do not wait idle: continue other work, then call"
                    + " read_output with this executionId and cursor (waitMs up to 30000 to wait for new output), or"
                    + " get_execution for its state; cancel_execution stops it.");
            return answer;
        }
        return withOutput(client, submitted, TEXT_LIMIT);
    }

    private ObjectNode getExecution(OutrunClient client, ToolArgs args) {
        String id = args.requiredString("executionId");
        Long waitMs = args.integer("waitMs");
        ExecutionView v = client.get(id, waitMs == null ? 0 : waitMs, "none");
        if (!v.finished()) {
            ObjectNode answer = state(v);
            answer.put("cursor", v.cursor());
            // The API words it in tool calls (this client's channel), and says what a queued run waits for.
            answer.put("guidance", v.guidance());
            return answer;
        }
        return withOutput(client, v, PREVIEW_LIMIT);
    }

    private ObjectNode readOutput(OutrunClient client, ToolArgs args) {
        String id = args.requiredString("executionId");
        Long waitMs = args.integer("waitMs");
        // A page of at most TEXT_LIMIT bytes per stream (so at most as many characters), from the
        // cursor on: the next cursor points just past it, so paging returns every byte once.
        OutputChunk chunk = client.output(id, args.string("cursor"), waitMs == null ? 0 : waitMs, TEXT_LIMIT);
        ObjectNode answer = Json.mapper().createObjectNode();
        answer.put("executionId", chunk.executionId());
        answer.put("status", chunk.status());
        answer.put("attempt", chunk.attempt());
        if (chunk.restarted()) {
            answer.put("restarted", true);
        }
        answer.put("stdout", chunk.stdout().text());
        answer.put("stderr", chunk.stderr().text());
        answer.put("cursor", chunk.cursor());
        answer.put("done", chunk.done());
        if (chunk.more()) {
            answer.put("more", true);
        }
        if (chunk.exitCode() != null) {
            answer.put("exitCode", chunk.exitCode());
        }
        String guidance;
        if (chunk.more()) {
            guidance = MORE;
        } else if (chunk.done()) {
            guidance = "Finished (" + chunk.status() + "); this is the last of its output. get_execution shows the exit"
                    + " code and any error.";
        } else {
            guidance = (chunk.restarted() ? "Its worker was lost: attempt " + chunk.attempt() + " runs the command again"
                    + " from the start, and this output is that attempt's. " : "")
                    + "More may come: call read_output again with this cursor (waitMs up to 30000 answers as soon as"
                    + " new output is printed or it ends). Do not wait idle if you have other work.";
        }
        answer.put("guidance", guidance);
        return answer;
    }

    /** How long write_stdin waits for the command's answer by default. */
    static final long STDIN_ANSWER_WAIT_MS = 2_000;
    /** Once an answer started, how long a quiet spell ends it (a prompt rarely comes in one write). */
    static final long STDIN_QUIET_MS = 300;

    private ObjectNode writeStdin(OutrunClient client, ToolArgs args) {
        String id = args.requiredString("executionId");
        String text = args.string("text");
        boolean eof = args.bool("eof", false);
        if ((text == null || text.isEmpty()) && !eof) {
            throw new ToolArgs.InvalidArgument("text: required unless eof is true (send \"\\n\" for an empty line)");
        }
        Long asked = args.integer("waitMs");
        long waitMs = Math.min(asked == null ? STDIN_ANSWER_WAIT_MS : Math.max(0, asked), 30_000);
        StdinWritten written = client.writeStdin(id, text, eof);
        String from = args.string("cursor") != null ? args.string("cursor") : written.cursor();
        // Its answer: the first output after the write, then whatever follows while it keeps
        // printing (a quiet spell or the wait ends it), at most TEXT_LIMIT bytes per stream.
        long deadline = System.nanoTime() + waitMs * 1_000_000L;
        StringBuilder out = new StringBuilder();
        StringBuilder err = new StringBuilder();
        OutputChunk chunk = null;
        String cursor = from;
        while (true) {
            long left = Math.max(0, (deadline - System.nanoTime()) / 1_000_000L);
            long wait = out.length() + err.length() == 0 ? left : Math.min(left, STDIN_QUIET_MS);
            chunk = client.output(id, cursor, wait, TEXT_LIMIT - Math.max(out.length(), err.length()));
            out.append(chunk.stdout().text());
            err.append(chunk.stderr().text());
            cursor = chunk.cursor();
            boolean quiet = chunk.stdout().text().isEmpty() && chunk.stderr().text().isEmpty();
            if (chunk.done() || chunk.more() || left == 0 || (quiet && out.length() + err.length() > 0)
                    || Math.max(out.length(), err.length()) >= TEXT_LIMIT / 2) {
                break;
            }
        }
        ObjectNode answer = Json.mapper().createObjectNode();
        answer.put("executionId", id);
        answer.put("written", written.written());
        answer.putObject("stdin").put("bytes", written.stdin().bytes()).put("closed", written.stdin().closed());
        answer.put("status", chunk.status());
        answer.put("stdout", out.toString());
        answer.put("stderr", err.toString());
        answer.put("cursor", cursor);
        answer.put("done", chunk.done());
        if (chunk.more()) {
            answer.put("more", true);
        }
        if (chunk.exitCode() != null) {
            answer.put("exitCode", chunk.exitCode());
        }
        answer.put("guidance", chunk.done() ? "It finished (" + chunk.status() + "); stdout and stderr hold the last"
                + " of its output. get_execution shows the exit code and any error."
                : chunk.more() ? MORE
                : (written.stdin().closed() ? "Written, and its stdin is closed. " : "Written. ")
                + "stdout and stderr hold what it printed since (its answer, up to waitMs). "
                + (written.stdin().closed() ? "" : "Call write_stdin again to answer its next prompt (eof=true closes"
                + " its stdin); ") + "read_output with this cursor shows what it prints next.");
        return answer;
    }

    /** Guidance of a page that stopped at its size with more output already printed. */
    private static final String MORE = "This answer holds only the first part of the output after the cursor"
            + " (at most " + TEXT_LIMIT + " bytes per stream); more is already there. Call read_output with this"
            + " cursor for the next part: no byte is skipped or repeated.";

    private ObjectNode cancel(OutrunClient client, ToolArgs args) {
        String id = args.requiredString("executionId");
        ExecutionView v = client.cancel(id);
        long deadline = System.nanoTime() + CANCEL_WAIT_MS * 1_000_000L;
        // The worker writes `cancelled` only after the engine says the command is dead.
        while (!v.finished() && System.nanoTime() < deadline) {
            v = client.get(id, 30_000, "none");
        }
        ObjectNode answer = state(v);
        answer.put("cursor", v.cursor());
        if (v.status().equals("cancelled")) {
            // The worker writes `cancelled` once the engine reports the command dead; it removes
            // the stopped container right after.
            answer.put("guidance", "Cancelled: the command and everything it started are gone"
                    + (v.attempt() > 0 ? " (its sandbox was killed)" : " (it never started)")
                    + ". read_output shows what it printed before.");
        } else if (v.finished()) {
            answer.put("guidance", "It ended as " + v.status() + " before the cancel took effect. " + v.guidance());
        } else {
            answer.put("guidance", "Cancel requested, but it was still " + v.status() + " after "
                    + CANCEL_WAIT_MS / 1000 + " s: its worker may be unreachable; Outrun kills it once the worker"
                    + " answers or its lease expires. get_execution shows when it is gone.");
        }
        return answer;
    }

    private ObjectNode list(OutrunClient client, ToolArgs args) {
        Long limit = args.integer("limit");
        Map<String, String> labels = args.stringMap("labels");
        ExecutionPage page = client.list(args.string("status"), labels == null ? Map.of() : labels,
                limit == null ? 20 : (int) Math.max(1, Math.min(100, limit)), args.string("after"));
        ObjectNode answer = Json.mapper().createObjectNode();
        ArrayNode rows = answer.putArray("executions");
        for (ExecutionSummary s : page.executions()) {
            rows.add(Json.mapper().valueToTree(s));
        }
        if (page.next() != null) {
            answer.put("next", page.next());
        }
        answer.put("guidance", page.executions().isEmpty() ? "No executions match." : "get_execution or read_output"
                + " with an executionId shows one" + (page.next() != null ? "; pass next as after for more." : "."));
        return answer;
    }

    // --- shapes -------------------------------------------------------------------------------

    private static ObjectNode state(ExecutionView v) {
        ObjectNode answer = Json.mapper().createObjectNode();
        answer.put("executionId", v.executionId());
        answer.put("status", v.status());
        if (v.exitCode() != null) {
            answer.put("exitCode", v.exitCode());
        }
        answer.put("attempt", v.attempt());
        answer.put("maxAttempts", v.maxAttempts());
        if (v.durationMs() != null) {
            answer.put("durationMs", v.durationMs());
        }
        answer.put("stdoutBytes", v.stdout().totalBytes());
        answer.put("stderrBytes", v.stderr().totalBytes());
        if (v.error() != null) {
            answer.putObject("error").put("code", v.error().code()).put("message", v.error().message());
        }
        if (v.progress() != null) {
            // What the run last reported of itself (POST …/progress with its run token).
            ObjectNode progress = answer.putObject("progress");
            if (v.progress().percent() != null) {
                progress.put("percent", v.progress().percent());
            }
            if (v.progress().message() != null) {
                progress.put("message", v.progress().message());
            }
            if (v.progress().at() != null) {
                progress.put("at", v.progress().at().toString());
            }
        }
        if (v.parentId() != null) {
            answer.put("parentId", v.parentId());
        }
        return answer;
    }

    /**
     * The state with the output since the start: its first {@code limit} bytes per stream, and
     * the cursor just past them, so read_output goes on where this answer stops; for a finished
     * execution its final state.
     */
    private ObjectNode withOutput(OutrunClient client, ExecutionView v, int limit) {
        OutputChunk chunk = client.output(v.executionId(), null, 0, limit);
        if (!v.finished() && !chunk.status().equals("queued") && !chunk.status().equals("running")) {
            v = client.get(v.executionId(), 0, "none"); // it ended between the two reads: show the end
        }
        ObjectNode answer = state(v);
        answer.put("stdout", chunk.stdout().text());
        answer.put("stderr", chunk.stderr().text());
        answer.put("cursor", chunk.cursor());
        answer.put("done", chunk.done());
        if (chunk.more()) {
            answer.put("more", true);
        }
        boolean tails = chunk.more() && v.finished() && withTails(client, v.executionId(), chunk, answer);
        answer.put("guidance", chunk.more() ? (v.finished() ? "Finished (" + v.status() + "). " : "") + MORE
                + (tails ? " stdoutTail and stderrTail show the end of a stream this answer stops short of (its"
                        + " last " + TAIL_CHARS + " characters, where an error usually is); they are a preview and"
                        + " do not move the cursor." : "")
                : chunk.done() ? v.guidance() : running(v));
        return answer;
    }

    /** Characters of a stream's end shown beside the first page of a finished run's output. */
    static final int TAIL_CHARS = 2_000;

    /**
     * For a finished run whose output did not fit: the end of each stream the page stops short
     * of, so an error printed last is seen at once; true when one was added.
     */
    private static boolean withTails(OutrunClient client, String id, OutputChunk page, ObjectNode answer) {
        ExecutionView tail = client.get(id, 0, "tail");
        boolean added = false;
        String[] names = {"stdoutTail", "stderrTail"};
        StreamDelta[] shown = {page.stdout(), page.stderr()};
        StreamText[] ends = {tail.stdout(), tail.stderr()};
        for (int i = 0; i < 2; i++) {
            long shownBytes = shown[i].text().getBytes(StandardCharsets.UTF_8).length;
            String text = ends[i].text();
            if (text != null && shownBytes < shown[i].totalBytes()) {
                int from = Math.max(0, text.length() - TAIL_CHARS);
                if (from > 0 && Character.isLowSurrogate(text.charAt(from))) {
                    from++;
                }
                answer.put(names[i], text.substring(from));
                added = true;
            }
        }
        return added;
    }

    /** What to do next while it is queued or running, in tool calls, for an answer that read the state before the output. */
    private static String running(ExecutionView v) {
        boolean queued = v.status().equals("queued");
        // Queued after a start, or running a later attempt: an earlier attempt was lost with its worker.
        int lostAttempt = queued ? v.attempt() : v.attempt() - 1;
        StringBuilder text = new StringBuilder();
        if (lostAttempt > 0) {
            text.append("Attempt ").append(lostAttempt).append(" lost its worker; the command runs again from the start")
                    .append(" as attempt ").append(lostAttempt + 1).append(" of ").append(v.maxAttempts())
                    .append(", and its output starts over. ");
        }
        text.append(queued ? "Queued; it starts when a worker has a free slot. "
                : "Still running (attempt " + v.attempt() + " of " + v.maxAttempts() + "). ");
        if (v.cancelRequested()) {
            text.append("Cancel requested; it stops within seconds. ");
        }
        text.append("Do not wait idle: continue other work, then call read_output with this cursor (only new output;"
                + " waitMs up to 30000 answers as soon as there is some) or get_execution");
        return text.append(v.cancelRequested() ? "." : "; cancel_execution stops it.").toString();
    }
}
