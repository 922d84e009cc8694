package io.outrun.client.wire;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The fields of a submission ({@code POST /v1/executions}), declared once: {@link SubmitRequest}'s
 * JSON properties, the server's parser, the MCP {@code run_command} tool and the OpenAPI
 * {@code SubmitRequest} component all name exactly these ({@code SubmissionFieldsTest} in api
 * holds each to this list). Declared in the order the parser names them when it refuses an
 * unknown field.
 */
public enum SubmissionField {
    COMMAND("command", JsonType.STRING, "bash source to run"),
    TIMEOUT_MS("timeoutMs", JsonType.INTEGER, "wall-clock limit in ms (clamped)"),
    MAX_OUTPUT_BYTES("maxOutputBytes", JsonType.INTEGER, "bytes kept per stream, head plus tail (clamped)"),
    WAIT_MS("waitMs", JsonType.INTEGER, "wait up to this long before answering (clamped to 30 s)"),
    WAIT_FOR("waitFor", JsonType.STRING, "what waitMs waits for: end or output"),
    MAX_ATTEMPTS("maxAttempts", JsonType.INTEGER, "attempts allowed when a worker is lost mid-run"),
    IMAGE("image", JsonType.STRING, "container image, or the node's default"),
    ENV("env", JsonType.OBJECT, "environment; names on the server's allowlist"),
    WORKDIR("workdir", JsonType.STRING, "absolute working directory"),
    LABELS("labels", JsonType.OBJECT, "free-form key/value labels"),
    FILES("files", JsonType.ARRAY, "input files written into the workdir first"),
    ARTIFACTS("artifacts", JsonType.ARRAY, "paths or globs collected after the end"),
    WORKSPACE("workspace", JsonType.STRING, "the owner's workspace restored before and saved after"),
    STDIN("stdin", JsonType.BOOLEAN, "keep the command's stdin open for writes"),
    TTY("tty", JsonType.BOOLEAN, "give the command a pseudo-terminal"),
    MEMORY_MB("memoryMb", JsonType.INTEGER, "memory limit in MiB (clamped)"),
    CPUS("cpus", JsonType.NUMBER, "CPUs, a fraction allowed (clamped)"),
    PIDS("pids", JsonType.INTEGER, "most processes at once (clamped)"),
    TMPFS_MB("tmpfsMb", JsonType.INTEGER, "size of the workdir and /tmp in MiB (clamped)"),
    NETWORK("network", JsonType.STRING, "egress through the node's proxy, or none"),
    SECRETS("secrets", JsonType.ARRAY, "names of the owner's secrets the run gets as env"),
    DELAY_MS("delayMs", JsonType.INTEGER, "start no sooner than this many ms after the submit"),
    /** Not offered by MCP: an agent says delayMs; an instant of its own clock would be a guess. */
    START_AT("startAt", JsonType.STRING, "start no sooner than this ISO-8601 instant", Mcp.NOT_OFFERED),
    RETRY("retry", JsonType.OBJECT, "run a failed command again"),
    WEBHOOK("webhook", JsonType.STRING, "where to POST the end, signed"),
    /** MCP takes {@code true} or an audience string, and makes the object of it. */
    IDENTITY("identity", JsonType.OBJECT, "the run gets an identity token for this audience", Mcp.OTHER_SHAPE),
    /** Not offered by MCP: only a run's child takes it, submitted with the run's token over HTTP. */
    CANCEL_WITH_PARENT("cancelWithParent", JsonType.BOOLEAN, "a child: whether it is cancelled with its parent",
            Mcp.NOT_OFFERED);

    /** A JSON Schema {@code type}. */
    public enum JsonType {
        STRING, INTEGER, NUMBER, BOOLEAN, OBJECT, ARRAY;

        /** As JSON Schema spells it. */
        public String schemaName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** How the MCP {@code run_command} tool offers a field. */
    public enum Mcp {
        /** The same name and JSON type as over HTTP. */
        SAME,
        /** The same name, another shape (the tool turns it into the wire's). */
        OTHER_SHAPE,
        /** Not an argument of the tool. */
        NOT_OFFERED
    }

    private static final Map<String, SubmissionField> BY_WIRE_NAME = Arrays.stream(values())
            .collect(Collectors.toUnmodifiableMap(SubmissionField::wireName, Function.identity()));

    private final String wireName;
    private final JsonType type;
    private final String description;
    private final Mcp mcp;

    SubmissionField(String wireName, JsonType type, String description) {
        this(wireName, type, description, Mcp.SAME);
    }

    SubmissionField(String wireName, JsonType type, String description, Mcp mcp) {
        this.wireName = wireName;
        this.type = type;
        this.description = description;
        this.mcp = mcp;
    }

    /** The JSON property's name. */
    public String wireName() {
        return wireName;
    }

    public JsonType type() {
        return type;
    }

    /** One line saying what it is (the OpenAPI document and the MCP schema say more). */
    public String description() {
        return description;
    }

    public Mcp mcp() {
        return mcp;
    }

    /** The field of that JSON name, or null when a submission has none. */
    public static SubmissionField byWireName(String name) {
        return BY_WIRE_NAME.get(name);
    }

    /** Every wire name, in declaration order. */
    public static List<String> wireNames() {
        return Arrays.stream(values()).map(SubmissionField::wireName).toList();
    }
}
