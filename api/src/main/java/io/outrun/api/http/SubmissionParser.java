package io.outrun.api.http;

import static io.outrun.api.http.JsonFields.clampedInt;
import static io.outrun.api.http.JsonFields.flag;
import static io.outrun.api.http.JsonFields.positive;
import static io.outrun.api.http.JsonFields.readObject;
import static io.outrun.api.http.JsonFields.string;
import static io.outrun.api.http.JsonFields.stringMap;

import com.fasterxml.jackson.databind.JsonNode;
import io.outrun.client.wire.IdempotencyKey;
import io.outrun.client.wire.SubmissionField;
import io.outrun.core.execution.Resources;
import io.outrun.core.execution.Retry;
import io.outrun.core.execution.RunInputs;
import io.outrun.core.execution.Submission;
import io.outrun.core.files.FilesConfig;
import io.outrun.core.webhook.WebhookUrl;
import io.outrun.model.inputs.StdinMode;
import io.outrun.model.inputs.Workdir;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Reads and checks the body of a submit. Each problem becomes a 400 that names the field;
 * limits above the server's maximum are clamped, not rejected. Strings are checked for NUL,
 * which PostgreSQL cannot store, so no input reaches the database in a shape it refuses. The
 * fields it knows are {@link SubmissionField}'s; {@link JsonFields} reads each one.
 */
final class SubmissionParser {

    private static final int MAX_ENV = 64;
    private static final int MAX_ENV_VALUE = 32 * 1024;
    private static final int MAX_LABEL_KEY = 64;
    private static final int MAX_LABEL_VALUE = 256;

    /** The label naming a child's parent (issue 31): Outrun's alone. */
    static final String PARENT_LABEL = "parent";

    private final ApiConfig config;
    private final RunInputsParser inputs;
    /** The API's public URL: the default audience of identity tokens. */
    private Supplier<String> publicUrl = () -> null;

    SubmissionParser(ApiConfig config) {
        this(config, FilesConfig.DEFAULTS);
    }

    SubmissionParser(ApiConfig config, FilesConfig files) {
        this.config = config;
        this.inputs = new RunInputsParser(files);
    }

    /** Where the default identity audience comes from (the server's public URL, known once it listens). */
    SubmissionParser withPublicUrl(Supplier<String> value) {
        this.publicUrl = value;
        return this;
    }

    /**
     * A checked submission, how long its caller wants to wait, and whether for any output or only
     * the end; {@code cancelWithParent} is what the body said (null: nothing), which only a run's
     * child takes ({@link SubmitChecks#asChild}).
     */
    record Parsed(Submission submission, long waitMs, boolean waitForOutput, Long waitMsClamped, Boolean cancelWithParent) {
    }

    /** An example of a submission's body, for errors about its shape. */
    static final String EXAMPLE = "{\"command\": \"echo hello\"}";

    Parsed parse(byte[] body, String owner, String idempotencyKey) {
        return parse(readObject(body, EXAMPLE), body.length, owner, idempotencyKey);
    }

    /** As {@link #parse(byte[], String, String)}, of a body already read ({@code bodyBytes} long): one item of a batch. */
    Parsed parse(JsonNode root, int bodyBytes, String owner, String idempotencyKey) {
        for (Iterator<String> names = root.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (SubmissionField.byWireName(name) == null) {
                throw ApiError.invalid(name, "is not a field of a submission (known: "
                        + String.join(", ", SubmissionField.wireNames()) + ")");
            }
        }
        requireWithinBodyLimit(bodyBytes, root);
        String command = string(root, "command", Integer.MAX_VALUE);
        if (command == null || command.isBlank()) {
            throw ApiError.invalid("command", "is required: a non-empty string of bash source");
        }
        long timeoutMs = Math.min(positive(root, "timeoutMs", 1, config.defaultTimeoutMs()), config.maxTimeoutMs());
        long outputBytes = Math.min(positive(root, "maxOutputBytes", 2, config.defaultOutputBytes()), config.maxOutputBytes());
        long waitMs = Math.min(positive(root, "waitMs", 0, 0), config.maxWaitMs());
        boolean waitForOutput = waitForOutput(string(root, "waitFor", 16));
        // 1 means "never run it again": the caller knows a second run would do harm. Above the
        // operator's maximum it is clamped like every other limit.
        int maxAttempts = (int) Math.min(positive(root, "maxAttempts", 1, config.maxAttempts()), config.maxAttempts());
        String image = string(root, "image", 256);
        if (image != null && !image.matches("[A-Za-z0-9][A-Za-z0-9._/:@-]*")) {
            throw ApiError.invalid("image", "must be an image reference such as busybox:1.36 or registry/name@sha256:...");
        }
        if (image != null && !config.imageAllowed(image)) {
            // Refused here, not on a worker: a worker would spend an attempt to say the same.
            throw new ApiError(400, "image_not_allowed", "image: " + image + " is not on this server's list of images"
                    + " executions may use (" + String.join(", ", config.imageAllowlist()) + ")",
                    "Submit again without `image` to use the default sandbox image, or name one of the allowed images."
                            + " An operator allows more with --image-allow.");
        }
        String workdir = string(root, "workdir", 1024);
        if (workdir != null) {
            try {
                Workdir.check(workdir);
            } catch (IllegalArgumentException e) {
                throw ApiError.invalid("workdir", e.getMessage());
            }
        }
        Map<String, String> env = env(root);
        Map<String, String> labels = labels(root);
        RunInputs runInputs = inputs.parse(root);
        for (String secret : runInputs.secrets()) {
            if (env.containsKey(secret)) {
                throw ApiError.invalid("env." + secret, "is also named in `secrets`: the secret sets it; drop one");
            }
        }
        Submission.Builder submission = Submission.builder().owner(owner).command(command).image(image).workdir(workdir)
                .env(env).labels(labels).timeoutMs(timeoutMs).maxOutputBytes((int) outputBytes).maxAttempts(maxAttempts)
                .idempotencyKey(idempotencyKey(idempotencyKey)).inputs(runInputs).stdin(stdinMode(root))
                .resources(resources(root));
        start(root, submission);
        return new Parsed(submission.retry(retry(root.get("retry"))).webhook(webhook(root))
                .identityAudience(identityAudience(root)).build(), waitMs, waitForOutput, clampedWait(root, waitMs),
                cancelWithParent(root));
    }

    /**
     * {@code "identity": {"audience": "…"}} (issue 31): the run gets {@code OUTRUN_ID_TOKEN}, for
     * that audience or the operator's default. {@code {}} asks for the default.
     */
    private String identityAudience(JsonNode root) {
        JsonNode node = root.get("identity");
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isObject()) {
            throw ApiError.invalid("identity", "must be an object, e.g. {\"audience\": \"https://my-service.example\"}"
                    + " or {} for the server's default audience");
        }
        for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!name.equals("audience")) {
                throw ApiError.invalid("identity." + name, "is not a field of identity (known: audience)");
            }
        }
        String audience = string(node, "audience", 200);
        if (audience == null) {
            return defaultAudience();
        }
        if (audience.isBlank() || audience.chars().anyMatch(Character::isISOControl)) {
            throw ApiError.invalid("identity.audience", "must be 1 to 200 characters without control characters");
        }
        return audience;
    }

    /** The operator's {@code --identity-audience}, else the issuer (the API's public URL, known once it listens). */
    private String defaultAudience() {
        String audience = config.identity().defaultAudience();
        return audience != null ? audience : publicUrl.get();
    }

    private static Boolean cancelWithParent(JsonNode root) {
        JsonNode node = root.get("cancelWithParent");
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isBoolean()) {
            throw ApiError.invalid("cancelWithParent", "must be true or false");
        }
        return node.booleanValue();
    }

    /**
     * {@code "webhook": "https://…"}: where its end is POSTed (issue 28), checked in shape here;
     * whether the operator allows it is asked after the idempotent-repeat check
     * ({@code SubmitChecks#requireSubmittable}), and again before every attempt.
     */
    private String webhook(JsonNode root) {
        String text = string(root, "webhook", WebhookUrl.MAX_LENGTH);
        if (text == null) {
            return null;
        }
        WebhookUrl url;
        try {
            url = WebhookUrl.parse(text);
        } catch (IllegalArgumentException e) {
            throw ApiError.invalid("webhook", e.getMessage());
        }
        return text;
    }

    private static final Set<String> RETRY_FIELDS = Set.of("maxRetries", "backoffMs", "on");

    /**
     * {@code "retry": {"maxRetries": N, "backoffMs": B, "on": ["command_failed", "timed_out"]}}: a
     * failed attempt runs again after B × 2^k ms; N and B are clamped to the maxima like timeoutMs.
     */
    private static Retry retry(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isObject()) {
            throw ApiError.invalid("retry", "must be an object such as {\"maxRetries\": 2, \"backoffMs\": 1000,"
                    + " \"on\": [\"command_failed\"]}");
        }
        for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!RETRY_FIELDS.contains(name)) {
                throw ApiError.invalid("retry." + (name.length() > 64 ? name.substring(0, 64) + "…" : name),
                        "is not a field of retry (known: maxRetries, backoffMs, on)");
            }
        }
        if (!node.hasNonNull("maxRetries")) {
            throw ApiError.invalid("retry.maxRetries", "is required: how many times a failed attempt may run again (1-"
                    + Retry.MAX_RETRIES + ")");
        }
        long max = Math.min(positive(node, "maxRetries", 1, 1), Retry.MAX_RETRIES);
        long backoff = Math.min(positive(node, "backoffMs", 0, Retry.DEFAULT_BACKOFF_MS),
                Retry.MAX_BACKOFF_MS);
        List<String> on = new ArrayList<>();
        JsonNode list = node.get("on");
        if (list != null && !list.isNull()) {
            if (!list.isArray() || list.isEmpty()) {
                throw ApiError.invalid("retry.on", "must be a non-empty list of error codes: command_failed, timed_out,"
                        + " out_of_memory");
            }
            for (int i = 0; i < list.size(); i++) {
                String code = list.get(i).isTextual() ? list.get(i).asText() : null;
                if (code == null || !Retry.RETRIABLE.contains(code)) {
                    throw ApiError.invalid("retry.on[" + i + "]", "must be command_failed, timed_out or out_of_memory");
                }
                if (!on.contains(code)) {
                    on.add(code);
                }
            }
        }
        return Retry.policy((int) max, backoff, on);
    }

    /** The longest a start may be put off: a longer wait is a schedule's job, not a queued row's. */
    static final long MAX_DELAY_MS = Duration.ofDays(30).toMillis();

    /**
     * {@code "delayMs"} or {@code "startAt"} (an ISO-8601 instant; one in the past starts at once):
     * the execution is stored now and claimable from then on. Refused, not clamped, beyond
     * {@link #MAX_DELAY_MS}: a start moved earlier than asked would surprise.
     */
    private static void start(JsonNode root, Submission.Builder s) {
        boolean delay = root.hasNonNull("delayMs");
        boolean at = root.hasNonNull("startAt");
        if (delay && at) {
            throw ApiError.invalid("startAt", "cannot be given with delayMs; send one of them");
        }
        if (delay) {
            long ms = positive(root, "delayMs", 0, 0);
            if (ms > MAX_DELAY_MS) {
                throw ApiError.invalid("delayMs", "must be at most " + MAX_DELAY_MS + " (30 days), got " + ms);
            }
            if (ms > 0) {
                s.delayMs(ms);
            }
            return;
        }
        if (at) {
            JsonNode node = root.get("startAt");
            Instant instant;
            try {
                instant = OffsetDateTime.parse(node.asText()).toInstant();
            } catch (DateTimeParseException e) {
                throw ApiError.invalid("startAt", "must be an ISO-8601 instant with its offset, e.g."
                        + " 2026-12-24T18:00:00Z or 2026-12-24T19:00:00+01:00");
            }
            if (!node.isTextual() || instant.isAfter(Instant.now().plusMillis(MAX_DELAY_MS))) {
                throw ApiError.invalid("startAt", "must be at most 30 days from now, got " + node.asText());
            }
            s.startAt(instant);
        }
    }

    /**
     * What the run asks of its sandbox beyond the node's defaults, each clamped to the operator's
     * maximum like timeoutMs (the answer shows what the run gets). {@code cpus} may be a fraction.
     */
    private Resources resources(JsonNode root) {
        Resources max = config.maxResources();
        Integer memoryMb = clampedInt(root, "memoryMb", Resources.MIN_MEMORY_MB, max.memoryMb());
        Integer pids = clampedInt(root, "pids", Resources.MIN_PIDS, max.pids());
        Integer tmpfsMb = clampedInt(root, "tmpfsMb", Resources.MIN_TMPFS_MB, max.tmpfsMb());
        Integer cpuMillis = null;
        JsonNode cpus = root.get("cpus");
        if (cpus != null && !cpus.isNull()) {
            if (!cpus.isNumber()) {
                throw ApiError.invalid("cpus", "must be a number of CPUs such as 0.5 or 2");
            }
            double asked = cpus.doubleValue();
            if (!(asked * 1000 >= Resources.MIN_CPU_MILLIS)) {
                throw ApiError.invalid("cpus", "must be at least " + Resources.MIN_CPU_MILLIS / 1000.0 + ", got "
                        + cpus.asText());
            }
            cpuMillis = (int) Math.min(Math.round(Math.min(asked, 1e6) * 1000), max.cpuMillis());
        }
        Resources r = new Resources(memoryMb, cpuMillis, pids, tmpfsMb, network(root));
        return r.isEmpty() ? Resources.NONE : r;
    }

    /** {@code "network": "egress"}: out through the node's proxy, to the operator's allowlist only. */
    private String network(JsonNode root) {
        String network = string(root, "network", 32);
        if (network == null || network.equals("none")) {
            return null;
        }
        if (!network.equals(Resources.EGRESS)) {
            throw ApiError.invalid("network", "must be \"egress\" (out through the node's proxy to the hosts the"
                    + " operator allows) or absent (no network), got: " + network);
        }
        if (config.egress().isEmpty()) {
            throw new ApiError(400, "egress_not_allowed", "network: this server allows no egress: its --egress-allow"
                    + " list is empty.", "Submit without network (the run has none), bring what it needs as files,"
                    + " or ask the operator to allow the hosts it needs with --egress-allow HOST[:PORT],….");
        }
        return network;
    }


    /** The wait used when the one asked for was above the server's maximum, else null (the answer says so). */
    private static Long clampedWait(JsonNode root, long used) {
        JsonNode asked = root.get("waitMs");
        return asked != null && asked.isIntegralNumber() && (!asked.canConvertToLong() || asked.longValue() > used)
                ? used : null;
    }

    /** {@code "stdin": true} keeps the command's stdin open; {@code "tty": true} gives it a terminal (stdin open too). */
    private static StdinMode stdinMode(JsonNode root) {
        boolean stdin = flag(root, "stdin");
        boolean tty = flag(root, "tty");
        return tty ? StdinMode.TTY : stdin ? StdinMode.PIPE : StdinMode.NONE;
    }


    /**
     * The body limit grows by the input files' room only: the rest of a submission (its command
     * first) stays within --max-body-bytes, as without files.
     */
    private void requireWithinBodyLimit(int bodyBytes, JsonNode root) {
        long files = 0;
        JsonNode list = root.get("files");
        if (list != null && list.isArray()) {
            for (JsonNode f : list) {
                JsonNode content = f.get("content");
                files += content != null && content.isTextual() ? content.textValue().length() : 0;
            }
        }
        if (bodyBytes - files > config.maxBodyBytes()) {
            throw new ApiError(413, "request_too_large", "The request body is larger than this server's limit of "
                    + config.maxBodyBytes() + " bytes (input files aside).", "Send a shorter command: put large inputs"
                    + " in `files` or a `workspace`, or have the command fetch them.");
        }
    }

    private static boolean waitForOutput(String waitFor) {
        if (waitFor == null || waitFor.equals("end")) {
            return false;
        }
        if (waitFor.equals("output")) {
            return true;
        }
        throw ApiError.invalid("waitFor", "must be \"end\" (answer when the command ends) or \"output\" (answer as"
                + " soon as it prints anything), got: " + waitFor);
    }

    /** The {@code Idempotency-Key} header, checked; null when absent. */
    static String idempotencyKey(String header) {
        return idempotencyKey(header, "Idempotency-Key");
    }

    /** A key given as {@code field} (a batch item's {@code idempotencyKey}), checked as the header is. */
    static String idempotencyKey(String header, String field) {
        if (header == null) {
            return null;
        }
        if (!IdempotencyKey.valid(header)) {
            throw ApiError.invalid(field, "must be 1-" + IdempotencyKey.MAX_LENGTH
                    + " printable ASCII characters without spaces, e.g. a UUID");
        }
        return header;
    }

    private Map<String, String> env(JsonNode root) {
        Map<String, String> env = stringMap(root, "env", MAX_ENV);
        for (Map.Entry<String, String> e : env.entrySet()) {
            String name = e.getKey();
            if (!name.matches("[A-Za-z_][A-Za-z0-9_]{0,127}")) {
                throw ApiError.invalid("env." + name, "is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*, at most 128)");
            }
            if (name.startsWith("_outrun_")) {
                // Whatever the allowlist says: the host-process sandbox's wrapper uses these names.
                throw ApiError.invalid("env." + name, "is reserved (names starting with _outrun_ belong to Outrun's"
                        + " sandbox wrapper); use another name");
            }
            if (!config.envAllowed(name)) {
                throw new ApiError(400, "invalid_request", "env." + name + ": is not on this server's allowlist of"
                        + " variables callers may set (" + config.envAllowlistText() + ")",
                        "Remove env." + name + ", or set it inside the command itself (e.g. `" + name + "=value cmd`)."
                                + " An operator can widen the allowlist with --env-allow.");
            }
            if (e.getValue().length() > MAX_ENV_VALUE) {
                throw ApiError.invalid("env." + name, "is longer than " + MAX_ENV_VALUE + " characters");
            }
        }
        return env;
    }

    private Map<String, String> labels(JsonNode root) {
        Map<String, String> labels = stringMap(root, "labels", config.maxLabels());
        if (labels.containsKey(PARENT_LABEL)) {
            throw ApiError.invalid("labels." + PARENT_LABEL, "is set by Outrun on a run's children (to their parent's id);"
                    + " choose another key");
        }
        for (Map.Entry<String, String> e : labels.entrySet()) {
            if (e.getKey().isEmpty() || e.getKey().length() > MAX_LABEL_KEY) {
                throw ApiError.invalid("labels", "keys must be 1-" + MAX_LABEL_KEY + " characters");
            }
            if (e.getValue().length() > MAX_LABEL_VALUE) {
                throw ApiError.invalid("labels." + e.getKey(), "is longer than " + MAX_LABEL_VALUE + " characters");
            }
        }
        return labels;
    }





}
