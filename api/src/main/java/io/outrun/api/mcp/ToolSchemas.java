package io.outrun.api.mcp;

import io.modelcontextprotocol.spec.McpSchema.ToolAnnotations;

/**
 * What the MCP tools say of themselves: each one's name, description (read by the model that
 * calls it), input schema and annotations; {@link OutrunTools} holds what they do. The
 * {@code run_command} schema offers the submission's fields ({@code io.outrun.client.wire.SubmissionField},
 * less those it marks as not offered) and {@link OutrunTools#RUN_COMMAND_OWN} ({@code SubmissionFieldsTest}
 * holds the two lists together).
 */
final class ToolSchemas {

    /** One tool as its host sees it. */
    record ToolText(String name, String description, String schema, ToolAnnotations annotations) {
    }

    static final ToolText RUN_COMMAND = new ToolText("run_command", """
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
            new ToolAnnotations("Run a command", false, true, false, true, null));

    static final ToolText GET_EXECUTION = new ToolText("get_execution", """
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
            new ToolAnnotations("Get an execution", true, false, true, false, null));

    static final ToolText READ_OUTPUT = new ToolText("read_output", """
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
            new ToolAnnotations("Read new output", true, false, true, false, null));

    static final ToolText WRITE_STDIN = new ToolText("write_stdin", """
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
            new ToolAnnotations("Write to a command's stdin", false, false, false, false, null));

    static final ToolText CANCEL_EXECUTION = new ToolText("cancel_execution", """
                        Stop an execution: a queued one never starts, a running one is killed with everything it \
                        started. Answers once the command is really gone (or says it is still stopping).""",
            """
                        {"type":"object","properties":{"executionId":{"type":"string"}},"required":["executionId"]}""",
            new ToolAnnotations("Cancel an execution", false, true, true, false, null));

    static final ToolText LIST_EXECUTIONS = new ToolText("list_executions", """
                        Your executions, newest first, without output: to find running or earlier commands again. \
                        Filter by status and by labels (all must match); pass next back as after for more.""",
            """
                        {"type":"object","properties":{
                          "status":{"type":"string","enum":["queued","running","succeeded","failed","timed_out","cancelled"]},
                          "labels":{"type":"object","additionalProperties":{"type":"string"}},
                          "limit":{"type":"integer","minimum":1,"maximum":100,"description":"default 20"},
                          "after":{"type":"string","description":"the next value of the previous page"}
                        }}""",
            new ToolAnnotations("List executions", true, false, true, false, null));

    static final ToolText LIST_ARTIFACTS = new ToolText("list_artifacts", """
                        The files an execution kept (named by artifacts when it was run) and, when its output \
                        outgrew what the answers show, its whole stdout and stderr: name, status, size, sha256. \
                        Empty until the command ended. What was not kept (over a limit, a link, missing) is \
                        listed with why.""",
            """
                        {"type":"object","properties":{"executionId":{"type":"string"}},"required":["executionId"]}""",
            new ToolAnnotations("List artifacts", true, false, true, false, null));

    static final ToolText READ_ARTIFACT = new ToolText("read_artifact", """
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
            new ToolAnnotations("Read an artifact", true, false, true, false, null));

    private ToolSchemas() {
    }
}
