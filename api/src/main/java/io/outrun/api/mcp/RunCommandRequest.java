package io.outrun.api.mcp;

import io.outrun.client.wire.IdempotencyKey;
import io.outrun.client.wire.InputFileSpec;
import io.outrun.client.wire.SubmitRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The submission a {@code run_command} call asks for: its arguments, checked for shape, as a
 * {@link SubmitRequest}. The server checks the values and answers each problem by name; only
 * what the tool's arguments shape differently from the wire (identity, waiting) is checked here.
 */
final class RunCommandRequest {

    private RunCommandRequest() {
    }

    /** {@code background}: answer at once; else wait up to waitMs ({@code foregroundWaitMs} by default). */
    static SubmitRequest from(ToolArgs args, boolean background, long foregroundWaitMs) {
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
            request = request.withWaitMs(waitMs == null ? foregroundWaitMs : waitMs).withWaitFor(waitFor);
        }
        return request;
    }

    /** The call's idempotencyKey (the HTTP Idempotency-Key header), checked; null when absent. */
    static String idempotencyKey(ToolArgs args) {
        String key = args.string("idempotencyKey");
        if (key != null && !IdempotencyKey.valid(key)) {
            throw new ToolArgs.InvalidArgument("idempotencyKey: must be 1-200 printable ASCII characters without"
                    + " spaces, e.g. a UUID");
        }
        return key;
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

    private static List<InputFileSpec> inputFiles(List<?> items) {
        if (items == null) {
            return null;
        }
        List<InputFileSpec> files = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            if (!(items.get(i) instanceof Map<?, ?> m) || !(m.get("path") instanceof String path)
                    || !(m.get("content") instanceof String content)) {
                throw new ToolArgs.InvalidArgument("files[" + i + "]: must be {\"path\": string, \"content\": string}");
            }
            Object mode = m.get("mode");
            files.add(new InputFileSpec(path, content, (String) (m.get("encoding") instanceof String e ? e : null),
                    mode == null ? null : String.valueOf(mode)));
        }
        return files;
    }

    private static List<String> strings(String name, List<?> items) {
        if (items == null) {
            return null;
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            if (!(items.get(i) instanceof String s)) {
                throw new ToolArgs.InvalidArgument(name + "[" + i + "]: must be a string");
            }
            out.add(s);
        }
        return out;
    }
}
