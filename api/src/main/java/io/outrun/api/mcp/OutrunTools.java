package io.outrun.api.mcp;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.spec.McpSchema.ServerCapabilities;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import io.modelcontextprotocol.spec.McpSchema.ToolAnnotations;
import io.outrun.client.ApiException;
import io.outrun.client.OutrunClient;
import io.outrun.client.UnreachableException;
import io.outrun.client.wire.ExecutionPage;
import io.outrun.client.wire.ExecutionSummary;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.Json;
import io.outrun.client.wire.OutputChunk;
import io.outrun.client.wire.SubmitRequest;
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
                spec("run_command", """
                        Run a bash command durably in Outrun's sandbox (no network unless the operator allows it; \
                        files written there are removed when it ends unless named in artifacts or kept by a \
                        workspace). files puts input files into the workdir first; artifacts names files to keep \
                        after it ends (read them with list_artifacts and read_artifact, also after a failure or \
                        timeout); workspace restores a named workdir and saves it back after the run, so the next \
                        run with the same workspace starts where this one left off. Foreground (default): waits up to waitMs \
                        (default 10000, at most 30000) and answers with the output; if the command is still \
                        running then, the answer carries its executionId and the output so far, and it keeps \
                        running. background=true answers at once with the executionId: use it for long compute, \
                        builds and tests, and anything that may outlive your turn, then do other work and check \
                        back with read_output or get_execution instead of waiting idle. waitFor="output" answers \
                        as soon as the command prints anything (to see that a server or watcher started). A \
                        command is re-run from the start if its worker dies (maxAttempts, default 3): pass \
                        maxAttempts=1 for commands that must never run twice (deploys, payments, migrations). \
                        For anything with side effects also pass idempotencyKey (any unique string of yours): \
                        calling again with the same key, e.g. after a lost answer or a "retry shortly", answers \
                        the execution the first call started instead of running the command twice. stdin=true \
                        keeps the command's stdin open (else it reads nothing): answer its prompts, or drive a \
                        REPL, with write_stdin; tty=true gives it a terminal (for programs that insist on one).""",
                        """
                        {"type":"object","properties":{
                          "command":{"type":"string","description":"bash source to run; any length"},
                          "background":{"type":"boolean","description":"answer at once with the executionId (default false)"},
                          "idempotencyKey":{"type":"string","minLength":1,"maxLength":200,"description":"1-200 printable ASCII characters without spaces (e.g. a UUID), unique to you: a repeat with the same key answers the first call's execution, never a second run (as the HTTP Idempotency-Key header)"},
                          "waitMs":{"type":"integer","minimum":0,"description":"foreground: how long to wait before answering (default 10000, max 30000)"},
                          "waitFor":{"type":"string","enum":["end","output"],"description":"what the wait is for: the end (default) or the first output"},
                          "timeoutMs":{"type":"integer","minimum":1,"description":"kill the command after this long (default 600000, clamped to the server's maximum)"},
                          "maxAttempts":{"type":"integer","minimum":1,"description":"runs allowed if workers die mid-run; 1 = never run it again"},
                          "maxOutputBytes":{"type":"integer","minimum":2,"description":"bytes kept per stream, head and tail (default 1 MiB)"},
                          "image":{"type":"string","description":"container image, if the operator allows others than the default"},
                          "workdir":{"type":"string","description":"absolute working directory"},
                          "env":{"type":"object","additionalProperties":{"type":"string"},"description":"environment (names on the server's allowlist)"},
                          "labels":{"type":"object","additionalProperties":{"type":"string"},"description":"labels to find it again with list_executions"},
                          "files":{"type":"array","description":"input files written into the workdir before the command starts","items":{"type":"object","properties":{
                            "path":{"type":"string","description":"relative to the workdir"},
                            "content":{"type":"string","description":"UTF-8 text, or base64 with encoding base64"},
                            "encoding":{"type":"string","enum":["utf8","base64"]},
                            "mode":{"type":"string","description":"permission bits such as 0755 (default 0644)"}},"required":["path","content"]}},
                          "artifacts":{"type":"array","items":{"type":"string"},"description":"paths or globs relative to the workdir to keep after the command ends, e.g. dist/*.tar or report.xml"},
                          "workspace":{"type":"string","description":"a name: restore that workspace into the workdir before the run and save it back after"},
                          "stdin":{"type":"boolean","description":"keep the command's stdin open for write_stdin (default false: it reads nothing)"},
                          "tty":{"type":"boolean","description":"give the command a terminal: stdin open, output through it, input echoed (default false)"},
                          "memoryMb":{"type":"integer","minimum":16,"description":"memory limit in MiB for a container run (default: the node's; clamped to the operator's maximum)"},
                          "cpus":{"type":"number","minimum":0.01,"description":"CPUs for a container run, fractions allowed (default: the node's; clamped)"},
                          "pids":{"type":"integer","minimum":8,"description":"most processes at once in a container run (default: the node's; clamped)"},
                          "tmpfsMb":{"type":"integer","minimum":1,"description":"size of the workdir and of /tmp in MiB for a container run (default: the node's; clamped)"},
                          "network":{"type":"string","enum":["egress"],"description":"egress: the run reaches the hosts the operator allows (--egress-allow) through its node's proxy (HTTP_PROXY/HTTPS_PROXY are set); absent: no network"},
                          "delayMs":{"type":"integer","minimum":0,"description":"start no sooner than this many ms from now (at most 30 days); the execution is queued with startsAt until then"},
                          "retry":{"type":"object","properties":{"maxRetries":{"type":"integer","minimum":1},"backoffMs":{"type":"integer","minimum":0},"on":{"type":"array","items":{"type":"string","enum":["command_failed","timed_out","out_of_memory"]}}},"required":["maxRetries"],"description":"run a failed command again up to maxRetries times (at most 10), waiting backoffMs (default 1000) doubled each time; on: which failures (default command_failed); the command sees its attempt in $OUTRUN_ATTEMPT"},
                          "webhook":{"type":"string","description":"an http(s) URL the operator allows (--webhook-allow): the end is POSTed there, signed (Standard Webhooks) with the owner's secret (POST /v1/webhook-secret)"},
                          "identity":{"type":["string","boolean"],"description":"true, or an audience such as \\"https://my-service.example\\": the command gets OUTRUN_ID_TOKEN, a short-lived JWT signed by the fleet's key (sub owner:<you>, aud the audience or the operator's default) that a service verifies against the API's /.well-known/jwks.json, instead of a long-lived credential"},
                          "secrets":{"type":"array","items":{"type":"string"},"description":"names of the owner's secrets (set by a person with `outrun secret set NAME`; you never see values) the run gets as environment variables, e.g. [\\"NPM_TOKEN\\"]; a printed value shows as [secret:NAME]"}
                        },"required":["command"]}""",
                        new ToolAnnotations("Run a command", false, true, false, true, null), this::runCommand),
                spec("get_execution", """
                        The state of one execution: status, exit code, attempts, error, byte counts, the \
                        progress it last reported of itself, its parentId when a run started it, and the output \
                        cursor. Once it has finished, also the first part of its output (read_output with the \
                        cursor goes on from there). \
                        waitMs (at most 30000) waits for the end. Prefer read_output to follow a running command.""",
                        """
                        {"type":"object","properties":{
                          "executionId":{"type":"string"},
                          "waitMs":{"type":"integer","minimum":0,"description":"wait up to this long for the end (default 0, max 30000)"}
                        },"required":["executionId"]}""",
                        new ToolAnnotations("Get an execution", true, false, true, false, null), this::getExecution),
                spec("read_output", """
                        Only the output an execution printed after cursor (omit cursor to read from the start), \
                        and the cursor to pass next time. waitMs (at most 30000) waits for new output and answers \
                        as soon as some arrives or the command ends. An answer holds at most 30000 bytes per stream: \
                        more=true means output already printed follows, so call again at once with the new cursor; \
                        paging by cursor returns every byte exactly once. done=true means this is the last of it.""",
                        """
                        {"type":"object","properties":{
                          "executionId":{"type":"string"},
                          "cursor":{"type":"string","description":"the cursor of your previous answer about this execution"},
                          "waitMs":{"type":"integer","minimum":0,"description":"wait up to this long for new output (default 0, max 30000)"}
                        },"required":["executionId"]}""",
                        new ToolAnnotations("Read new output", true, false, true, false, null), this::readOutput),
                spec("write_stdin", """
                        Write text to the stdin of a command started with stdin=true or tty=true (end a line \
                        with \\n), then answer with what it printed since, waiting up to waitMs (default 2000, \
                        at most 30000) for it: answer a prompt, drive a REPL or a debugger. eof=true closes its \
                        stdin after the text (or alone). Writes reach the command in order, each once; if its \
                        worker is lost, the next attempt starts with everything written so far.""",
                        """
                        {"type":"object","properties":{
                          "executionId":{"type":"string"},
                          "text":{"type":"string","description":"what to type; end a line with \\n"},
                          "eof":{"type":"boolean","description":"close stdin after the text (default false)"},
                          "waitMs":{"type":"integer","minimum":0,"description":"wait up to this long for its answer (default 2000, max 30000)"},
                          "cursor":{"type":"string","description":"answer with the output after this cursor (default: from just before this write)"}
                        },"required":["executionId"]}""",
                        new ToolAnnotations("Write to a command's stdin", false, false, false, false, null), this::writeStdin),
                spec("cancel_execution", """
                        Stop an execution: a queued one never starts, a running one is killed with everything it \
                        started. Answers once the command is really gone (or says it is still stopping).""",
                        """
                        {"type":"object","properties":{"executionId":{"type":"string"}},"required":["executionId"]}""",
                        new ToolAnnotations("Cancel an execution", false, true, true, false, null), this::cancel),
                spec("list_executions", """
                        Your executions, newest first, without output: to find running or earlier commands again. \
                        Filter by status and by labels (all must match); pass next back as after for more.""",
                        """
                        {"type":"object","properties":{
                          "status":{"type":"string","enum":["queued","running","succeeded","failed","timed_out","cancelled"]},
                          "labels":{"type":"object","additionalProperties":{"type":"string"}},
                          "limit":{"type":"integer","minimum":1,"maximum":100,"description":"default 20"},
                          "after":{"type":"string","description":"the next value of the previous page"}
                        }}""",
                        new ToolAnnotations("List executions", true, false, true, false, null), this::list),
                spec("list_artifacts", """
                        The files an execution kept (named by artifacts when it was run) and, when its output \
                        outgrew what the answers show, its whole stdout and stderr: name, status, size, sha256. \
                        Empty until the command ended. What was not kept (over a limit, a link, missing) is \
                        listed with why.""",
                        """
                        {"type":"object","properties":{"executionId":{"type":"string"}},"required":["executionId"]}""",
                        new ToolAnnotations("List artifacts", true, false, true, false, null), this::listArtifacts),
                spec("read_artifact", """
                        Reads part of one artifact (by name from list_artifacts, e.g. stdout or dist/report.xml): \
                        maxBytes bytes (default 65536, at most 1048576) from offset (default 0), as UTF-8 text, \
                        or base64 when it is not text. Pass nextOffset back as offset to read on; done=true at the end.""",
                        """
                        {"type":"object","properties":{
                          "executionId":{"type":"string"},
                          "name":{"type":"string"},
                          "offset":{"type":"integer","minimum":0},
                          "maxBytes":{"type":"integer","minimum":1,"maximum":1048576}
                        },"required":["executionId","name"]}""",
                        new ToolAnnotations("Read an artifact", true, false, true, false, null), this::readArtifact));
    }

    private SyncToolSpecification spec(String name, String description, String schema, ToolAnnotations annotations,
                                       BiFunction<OutrunClient, ToolArgs, ObjectNode> handler) {
        Tool tool = Tool.builder().name(name).description(description).inputSchema(mapper, schema)
                .annotations(annotations).build();
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
        String waitFor = args.string("waitFor");
        if (waitFor != null && !waitFor.equals("end") && !waitFor.equals("output")) {
            throw new ToolArgs.InvalidArgument("waitFor: must be \"end\" or \"output\", got: " + waitFor);
        }
        Long waitMs = args.integer("waitMs");
        Long maxAttempts = args.integer("maxAttempts");
        SubmitRequest request = SubmitRequest.of(args.requiredString("command"))
                .withTimeoutMs(args.integer("timeoutMs"))
                .withMaxOutputBytes(args.integer("maxOutputBytes"))
                .withMaxAttempts(maxAttempts == null ? null : (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, maxAttempts)))
                .withImage(args.string("image"))
                .withWorkdir(args.string("workdir"))
                .withEnv(args.stringMap("env"))
                .withLabels(args.stringMap("labels"))
                .withFiles(inputFiles(args.list("files")))
                .withArtifacts(strings("artifacts", args.list("artifacts")))
                .withWorkspace(args.string("workspace"))
                .withStdin(args.bool("stdin", false))
                .withTty(args.bool("tty", false))
                .withResources(args.smallInteger("memoryMb"), args.number("cpus"), args.smallInteger("pids"),
                        args.smallInteger("tmpfsMb"))
                .withNetwork(args.string("network"))
                .withSecrets(strings("secrets", args.list("secrets")))
                .withDelayMs(args.integer("delayMs"))
                .withRetry(retry(args.object("retry")))
                .withWebhook(args.string("webhook"));
        Object identity = args.value("identity");
        if (identity instanceof String audience) {
            request = request.withIdentity(audience); // the server checks it
        } else if (Boolean.TRUE.equals(identity)) {
            request = request.withIdentity(null);
        } else if (identity != null && !Boolean.FALSE.equals(identity)) {
            throw new ToolArgs.InvalidArgument("identity: must be true or an audience string, e.g."
                    + " \"https://my-service.example\"");
        }
        if (!background) {
            request = request.withWaitMs(waitMs == null ? FOREGROUND_WAIT_MS : waitMs).withWaitFor(waitFor);
        }
        String key = args.string("idempotencyKey");
        if (key != null && !io.outrun.client.wire.IdempotencyKey.valid(key)) {
            throw new ToolArgs.InvalidArgument("idempotencyKey: must be 1-200 printable ASCII characters without"
                    + " spaces, e.g. a UUID");
        }
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

    /** The server checks the numbers and codes and answers each problem by name. */
    private static SubmitRequest.RetrySpec retry(ToolArgs retry) {
        if (retry == null) {
            return null;
        }
        Long max = retry.integer("maxRetries");
        if (max == null) {
            throw new ToolArgs.InvalidArgument("retry.maxRetries: is required (1-10)");
        }
        return new SubmitRequest.RetrySpec((int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, max)),
                retry.integer("backoffMs"), strings("retry.on", retry.listOf("on")));
    }

    private static List<io.outrun.client.wire.InputFileSpec> inputFiles(List<?> items) {
        if (items == null) {
            return null;
        }
        List<io.outrun.client.wire.InputFileSpec> files = new java.util.ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            if (!(items.get(i) instanceof Map<?, ?> m) || !(m.get("path") instanceof String path)
                    || !(m.get("content") instanceof String content)) {
                throw new ToolArgs.InvalidArgument("files[" + i + "]: must be {\"path\": string, \"content\": string}");
            }
            Object mode = m.get("mode");
            files.add(new io.outrun.client.wire.InputFileSpec(path, content, (String) (m.get("encoding") instanceof String e ? e : null),
                    mode == null ? null : String.valueOf(mode)));
        }
        return files;
    }

    private static List<String> strings(String name, List<?> items) {
        if (items == null) {
            return null;
        }
        List<String> out = new java.util.ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            if (!(items.get(i) instanceof String s)) {
                throw new ToolArgs.InvalidArgument(name + "[" + i + "]: must be a string");
            }
            out.add(s);
        }
        return out;
    }

    private ObjectNode listArtifacts(OutrunClient client, ToolArgs args) {
        io.outrun.client.wire.ArtifactList list = client.artifacts(args.requiredString("executionId"));
        ObjectNode answer = Json.mapper().createObjectNode();
        answer.put("executionId", list.executionId());
        ArrayNode rows = answer.putArray("artifacts");
        for (io.outrun.client.wire.ArtifactList.Item a : list.artifacts()) {
            ObjectNode row = rows.addObject();
            row.put("name", a.name()).put("status", a.status()).put("size", a.size());
            if (a.sha256() != null) {
                row.put("sha256", a.sha256());
            }
            if (a.detail() != null) {
                row.put("detail", a.detail());
            }
        }
        answer.put("guidance", list.artifacts().isEmpty() ? "Nothing kept (yet): artifacts are collected when the"
                + " command ends; name files with artifacts when you run it." : "read_artifact with a name reads one.");
        return answer;
    }

    private ObjectNode readArtifact(OutrunClient client, ToolArgs args) {
        String id = args.requiredString("executionId");
        String name = args.requiredString("name");
        Long offsetArg = args.integer("offset");
        Long maxArg = args.integer("maxBytes");
        long offset = offsetArg == null ? 0 : Math.max(0, offsetArg);
        int max = (int) (maxArg == null ? 65536 : Math.max(1, Math.min(1 << 20, maxArg)));
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        client.download(id, name, bytes, offset, max);
        byte[] read = bytes.toByteArray();
        ObjectNode answer = Json.mapper().createObjectNode();
        answer.put("executionId", id);
        answer.put("name", name);
        answer.put("offset", offset);
        try {
            answer.put("text", java.nio.charset.StandardCharsets.UTF_8.newDecoder()
                    .decode(java.nio.ByteBuffer.wrap(read)).toString());
        } catch (java.nio.charset.CharacterCodingException e) {
            // Binary, or a read that cut a character: base64 keeps every byte.
            answer.put("base64", java.util.Base64.getEncoder().encodeToString(read));
        }
        answer.put("nextOffset", offset + read.length);
        answer.put("done", read.length < max);
        answer.put("guidance", read.length < max ? "That is the end of it." : "More follows: call read_artifact again"
                + " with offset " + (offset + read.length) + ".");
        return answer;
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
        io.outrun.client.wire.StdinWritten written = client.writeStdin(id, text, eof);
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
        io.outrun.client.wire.StreamDelta[] shown = {page.stdout(), page.stderr()};
        io.outrun.client.wire.StreamText[] ends = {tail.stdout(), tail.stderr()};
        for (int i = 0; i < 2; i++) {
            long shownBytes = shown[i].text().getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
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
