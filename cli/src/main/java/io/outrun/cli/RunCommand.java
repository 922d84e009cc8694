package io.outrun.cli;

import io.outrun.client.OutrunClient;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.SubmitRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Set;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Submits a command. By default prints its execution id and returns at once; {@code --wait}
 * waits for the end and prints the output; {@code --follow} streams the output live. Both exit
 * with the command's exit code.
 */
@Command(name = "run", mixinStandardHelpOptions = true, description = {
        "Run a command durably on the Outrun fleet.",
        "The arguments after -- are joined with spaces and run by bash (like ssh): quote a whole script as one argument,",
        "or pass a script of any size with --script PATH (--script - reads stdin).",
        "--batch FILE submits one command per line of FILE, a JSON object each: {\"command\": \"make test\"}.",
        "Exit code with --wait/--follow: the command's own; 124 timed out, 130 cancelled, 1 Outrun failed.",
        "With --batch: 0 all accepted, 3 some refused (the others stored), 1 Outrun failed, 2 a bad line."})
public final class RunCommand extends ClientCommand {

    private static final long WAIT_STEP_MS = 30_000;

    @Option(names = "--wait", description = "Wait for the end, then print stdout and stderr")
    boolean waitForEnd;

    @Option(names = {"-f", "--follow"}, description = "Stream the output live until the end")
    boolean follow;

    @Option(names = "--wait-for-output", description = "Wait (up to 30 s) until the command prints something or ends,"
            + " print that, then the id and the cursor to read on with (outrun logs ID --cursor C)")
    boolean waitForOutput;

    @Option(names = "--json", description = "Print JSON (with --follow: one line per output chunk, then the result)")
    boolean json;

    @picocli.CommandLine.Mixin
    CommandOptions common = new CommandOptions();

    @Option(names = "--max-output-bytes", description = "Bytes kept per stream (server default 1 MiB)")
    Long maxOutputBytes;

    @Option(names = "--workdir", description = "Absolute working directory")
    String workdir;

    @Option(names = "--max-attempts", description = "Attempts if a worker is lost mid-run; 1 = never run it again"
            + " (server default 3, clamped to its maximum)")
    Integer maxAttempts;

    @Option(names = "--idempotency-key", description = "A retry with the same key returns the same execution")
    String idempotencyKey;

    @Option(names = "--script", paramLabel = "PATH", description = "Read the command (a bash script, any size) from"
            + " PATH instead of the arguments; - reads it from stdin")
    String file;

    @Option(names = "--file", paramLabel = "LOCAL[:PATH]", description = "Send the local file LOCAL into the workdir"
            + " as PATH (default: its name), byte for byte with its permissions; repeatable")
    List<String> inputFiles;

    @Option(names = "--artifact", paramLabel = "GLOB", description = "Collect PATH or GLOB (relative to the workdir)"
            + " after the command ends; download with outrun get ID NAME; repeatable")
    List<String> artifacts;

    @Option(names = "--workspace", paramLabel = "NAME", description = "Restore your workspace NAME into the workdir"
            + " before the run and save it back after")
    String workspace;

    @Option(names = "--stdin", description = "Keep the command's stdin open: write to it with `outrun send ID TEXT`"
            + " or `outrun attach ID` (else it reads nothing)")
    boolean stdin;

    @Option(names = "--tty", description = "Give the command a terminal (stdin open too): for programs that want one")
    boolean tty;

    @Option(names = "--memory-mb", description = "Memory for the run's container in MiB (server clamps to its maximum)")
    Integer memoryMb;

    @Option(names = "--cpus", description = "CPUs for the run's container, fractions allowed (clamped)")
    Double cpus;

    @Option(names = "--pids", description = "Most processes at once in the run's container (clamped)")
    Integer pids;

    @Option(names = "--tmpfs-mb", description = "Size of the run's workdir and /tmp in MiB (clamped)")
    Integer tmpfsMb;

    @Option(names = "--delay-ms", paramLabel = "MS", description = "Start no sooner than MS from now (at most 30 days)")
    Long delayMs;

    @Option(names = "--start-at", paramLabel = "INSTANT", description = "Start no sooner than this ISO-8601 instant,"
            + " e.g. 2026-12-24T18:00:00Z")
    String startAt;

    @Option(names = "--egress", description = "Let the run reach the hosts the operator allows (--egress-allow), through"
            + " its node's proxy; without it a run has no network")
    boolean egress;

    @Option(names = "--retries", paramLabel = "N", description = "Run a failed command again up to N times (1-10), after"
            + " --retry-backoff-ms, doubled each time")
    Integer retries;

    @Option(names = "--retry-backoff-ms", paramLabel = "MS", description = "The first retry's wait (default 1000)")
    Long retryBackoffMs;

    @Option(names = "--identity", arity = "0..1", paramLabel = "AUDIENCE", fallbackValue = "",
            description = "Give the run an identity: env OUTRUN_ID_TOKEN, a JWT signed by the fleet's key (sub owner:YOU)"
                    + " that a service verifies against the API's /.well-known/jwks.json; for AUDIENCE (its aud), or"
                    + " without one the operator's default")
    String identity;

    @Option(names = "--no-cancel-with-parent", description = "Inside a run (a child): let this one outlive its parent"
            + " (by default a child is cancelled when its parent ends)")
    boolean noCancelWithParent;

    @Parameters(arity = "0..*", paramLabel = "CMD", description = "The command, after -- (or use --script)")
    List<String> command;

    @Option(names = "--batch", paramLabel = "FILE", description = "Submit many commands at once: one JSON object per"
            + " line of FILE (- reads stdin), a submission as POST /v1/executions takes it, with an optional"
            + " idempotencyKey: {\"command\": \"make test\", \"labels\": {\"shard\": \"1\"}}. Blank lines and lines"
            + " starting with # are skipped; every line is checked before anything is sent. Sent 1000 per request;"
            + " prints LINE<TAB>ID per accepted line and LINE<TAB>error<TAB>CODE<TAB>MESSAGE per refused one"
            + " (--json: one JSON object each). Takes no other run option")
    String batch;

    /** The options --batch goes with: the file's lines hold everything else. */
    private static final Set<String> BATCH_OPTIONS = Set.of("--batch", "--json", "--api", "--token");

    @Override
    int run(OutrunClient client) {
        if (batch != null) {
            return runBatch(client);
        }
        if (idempotencyKey != null && !ClientOptions.printable(idempotencyKey)) {
            throw new UsageException("--idempotency-key must be visible ASCII characters only (no spaces or control characters)");
        }
        if ((waitForEnd ? 1 : 0) + (follow ? 1 : 0) + (waitForOutput ? 1 : 0) > 1) {
            throw new UsageException("choose one of --wait, --follow and --wait-for-output");
        }
        SubmitRequest request = new SubmitRequest(commandText(), common.timeoutMs, maxOutputBytes,
                waitForEnd || waitForOutput ? WAIT_STEP_MS : null, common.image, common.env, workdir, common.labels, maxAttempts,
                waitForOutput ? "output" : null, InputFiles.read(inputFiles), artifacts, workspace)
                .withStdin(stdin).withTty(tty).withResources(memoryMb, cpus, pids, tmpfsMb)
                .withNetwork(egress ? "egress" : null).withSecrets(common.secrets).withDelayMs(delayMs)
                .withWebhook(common.webhook)
                .withRetry(retries == null ? null : new SubmitRequest.RetrySpec(retries, retryBackoffMs, null))
                .withCancelWithParent(noCancelWithParent ? Boolean.FALSE : null);
        if (identity != null) {
            request = request.withIdentity(identity.isBlank() ? null : identity);
        }
        if (startAt != null) {
            try {
                request = request.withStartAt(OffsetDateTime.parse(startAt).toInstant());
            } catch (DateTimeParseException e) {
                throw new UsageException("--start-at must be an ISO-8601 instant with its offset, e.g."
                        + " 2026-12-24T18:00:00Z, got: " + startAt);
            }
        }
        ExecutionView v = client.submit(request, idempotencyKey, waitForEnd || waitForOutput ? "full" : null);
        if (waitForOutput && !v.finished()) {
            if (json) {
                printJson(v);
            } else {
                out().print(v.stdout().text());
                err().print(v.stderr().text());
                err().println("outrun: " + v.status() + " as " + v.executionId() + ". Read on: outrun logs "
                        + v.executionId() + " --cursor " + v.cursor() + "   follow: outrun logs -f " + v.executionId()
                        + "   cancel: outrun cancel " + v.executionId());
            }
            return 0;
        }
        if (follow) {
            return followToEnd(client, v.executionId(), json);
        }
        if (waitForEnd || waitForOutput) {
            while (!v.finished()) {
                v = client.get(v.executionId(), WAIT_STEP_MS, "full");
            }
            if (json) {
                printJson(v);
            } else {
                out().print(v.stdout().text());
                err().print(v.stderr().text());
            }
            reportEnd(v);
            return exitCodeOf(v);
        }
        if (json) {
            printJson(v);
        } else {
            out().println(v.executionId());
            err().println("outrun: " + v.status() + ". Follow: outrun logs -f " + v.executionId()
                    + "   status: outrun status " + v.executionId() + "   cancel: outrun cancel " + v.executionId());
        }
        return 0;
    }

    /** {@code --batch FILE}: every line checked first, then sent; see {@link BatchFile} and {@link BatchSubmit}. */
    private int runBatch(OutrunClient client) {
        if (command != null && !command.isEmpty()) {
            throw new UsageException("--batch takes its commands from " + batch + ", one JSON object per line: give no"
                    + " command after -- with it (got: " + String.join(" ", command) + ")");
        }
        List<String> others = spec.commandLine().getParseResult().matchedOptions().stream()
                .filter(o -> !o.inherited()) // the root's own (--log-format) apply to every command
                .map(o -> o.longestName()).filter(n -> !BATCH_OPTIONS.contains(n)).distinct().toList();
        if (!others.isEmpty()) {
            throw new UsageException("--batch takes no " + String.join(", ", others) + ": each line of " + batch
                    + " is a whole submission (e.g. {\"command\": \"make\", \"timeoutMs\": 60000, \"labels\": {\"k\":"
                    + " \"v\"}}); --json and --api/--token are the options it takes");
        }
        List<BatchFile.Line> lines = BatchFile.read(batch);
        return new BatchSubmit(client, out(), err(), json).send(batch.equals("-") ? "stdin" : batch, lines);
    }

    /** The arguments joined, or the script from --script: a script over ~128 KB cannot pass through an argv. */
    private String commandText() {
        boolean args = command != null && !command.isEmpty();
        if (file != null && args) {
            throw new UsageException("give the command either after -- or with --script, not both");
        }
        if (file == null) {
            if (!args) {
                throw new UsageException("no command: give it after -- (outrun run -- 'make test'), or with --script PATH"
                        + " (--script - reads it from stdin; --file sends input files)");
            }
            return String.join(" ", command);
        }
        try {
            byte[] bytes = file.equals("-") ? System.in.readAllBytes() : Files.readAllBytes(Path.of(file));
            String text = new String(bytes, StandardCharsets.UTF_8);
            if (text.isBlank()) {
                throw new UsageException("--script " + file + " holds no command");
            }
            return text;
        } catch (IOException e) {
            throw new UsageException("--script " + file + " cannot be read: " + e.getMessage());
        }
    }
}
