package io.outrun.api.http;

import io.outrun.core.execution.Execution;
import io.outrun.core.store.Outcome;
import io.outrun.core.store.SubmissionStore;
import io.outrun.model.output.Captured;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * What an agent should do next, in words, for each state. Agents act on this text, so it names
 * concrete calls and says plainly not to wait idle or poll in a tight loop.
 */
final class Guidance {

    private final ApiConfig config;

    Guidance(ApiConfig config) {
        this.config = config;
    }

    String forExecution(Execution e) {
        return forExecution(e, Channel.HTTP);
    }

    String forExecution(Execution e, Channel ch) {
        return forExecution(e, ch, null);
    }

    /**
     * What to do next with {@code e}, in the words of {@code ch}; {@code held}: the run of the
     * same workspace a queued {@code e} waits for (null: none).
     */
    String forExecution(Execution e, Channel ch, SubmissionStore.WorkspaceHeld held) {
        String id = e.id().toString();
        String follow = ch.follow(id, "<cursor>", config.maxWaitMs())
                + " (pass this answer's cursor, then each answer's) streams only output you have not seen";
        String poll = ch.awaitEnd(id, config.maxWaitMs());
        // Once a cancel is requested, offering the cancel again would only loop the caller.
        String cancel = e.cancelRequested() ? "" : "; " + ch.cancel(id) + " stops it";
        String stdin = e.stdin().mode().open() && !e.stdin().closed() ? "; " + ch.writeStdin(id) + " answers its"
                + " prompts (its stdin is open" + (e.stdin().bytes() > 0 ? ", " + e.stdin().bytes() + " bytes written" : "")
                + ")" : "";
        String text = switch (e.status()) {
            case QUEUED -> queued(e, ch, held) + " Do not wait idle: continue other work, then check back. " + poll + "; "
                    + follow + stdin + cancel + ".";
            case RUNNING -> (e.cancelRequested() ? "Cancel requested; the worker kills it within seconds. " : "")
                    + "Running (attempt " + e.attempt() + " of " + (e.maxAttempts() + retries(e)) + ")." + earlierAttempts(e)
                    + " Do not wait idle: continue other work, then check back. " + poll + "; " + follow + stdin + cancel + ".";
            case SUCCEEDED -> "Finished with exit code 0; stdout and stderr hold its output." + memoryKill(e);
            case FAILED -> failed(e, ch);
            case TIMED_OUT -> "Killed at its timeout of " + e.timeoutMs() + " ms." + (e.timeoutMs() < config.maxTimeoutMs()
                    ? " Resubmit with a larger " + ch.field("timeoutMs") + " (this server allows up to "
                            + config.maxTimeoutMs() + " ms), or"
                    : " That is this server's maximum:") + " split the work into smaller executions that each finish in"
                    + " time. Files written inside the sandbox are removed when it ends unless named in "
                    + ch.field("artifacts") + " (collected after a timeout too: " + ch.listArtifacts(e.id()) + "); run"
                    + " it with a " + ch.field("workspace") + " to keep its workdir for the next run, so a re-run resumes"
                    + " instead of starting from scratch.";
            case CANCELLED -> e.errorMessage() != null && e.errorMessage().startsWith("Cancelled by an admin")
                    ? "Cancelled by an operator from the dashboard (its JobRunr job was deleted), not by you. Submit it"
                    + " again if it is still needed; ask the operator if it keeps happening."
                    : "Cancelled by its owner. Submit it again if it is still needed.";
        };
        if (nothingKept(e.stdout()) && nothingKept(e.stderr()) && e.stdout().totalBytes() + e.stderr().totalBytes() > 0) {
            text += " Its stored output was removed by retention (outrun prune) after it ended; byte counts remain.";
        } else if (e.stdout().truncated() || e.stderr().truncated()) {
            text += " Output was truncated: the first and last bytes are kept and the middle is marked as dropped."
                    + (e.maxOutputBytes() < config.maxOutputBytes()
                            ? " Resubmit with a larger " + ch.field("maxOutputBytes") + " (up to " + config.maxOutputBytes()
                                    + "), or print"
                            : " It already kept this server's maximum of " + config.maxOutputBytes() + " bytes per stream:"
                                    + " print")
                    + " a summary instead of everything (filter with grep, tail or wc). The whole stream is kept,"
                    + " compressed, up to the operator's cap, as the artifact stdout or stderr: "
                    + ch.readArtifact(e.id(), "stdout") + ". Other files written in the sandbox are removed when it ends"
                    + " unless named in " + ch.field("artifacts") + ".";
        }
        return text;
    }

    /** Queued twice over: never started, or back in the queue after its worker was lost. */
    private static String queued(Execution e, Channel ch, SubmissionStore.WorkspaceHeld held) {
        String cancelled = e.cancelRequested() ? "Cancel requested. " : "";
        if (held != null) {
            // Not a matter of slots or caps: two runs of one workspace never overlap.
            return cancelled + "Queued: it waits for its workspace " + held.workspace() + ", which your execution "
                    + held.holder() + " is running with. Runs of one workspace never overlap (each starts from the"
                    + " workdir the previous one left), so it starts when that one ends" + (e.attempt() > 0
                    ? "; attempt " + e.attempt() + " lost its worker and it runs again from the start." : ".");
        }
        if (retries(e) > 0) {
            Instant next = e.enqueuedAt();
            return cancelled + "Queued for retry " + retries(e) + " of " + e.retry().maxRetries() + ": "
                    + e.retry().lastFailure() + " (its output is shown until the retry starts). It starts "
                    + (next != null && next.isAfter(Instant.now()) ? "at " + next + ", after its backoff, "
                    : "") + "as soon as a worker has a free slot, as attempt " + (e.attempt() + 1) + ".";
        }
        if (e.attempt() == 0 && e.enqueuedAt() != null && e.startsAt() != null
                && e.enqueuedAt().isAfter(Instant.now())) {
            return cancelled + "Queued until " + e.enqueuedAt() + " (a delayed start: see startsAt); it starts then,"
                    + " as soon as a worker has a free slot.";
        }
        if (e.attempt() == 0) {
            return cancelled + "Queued; it starts as soon as a worker has a free slot (at once when one is idle). The"
                    + " fleet is shared fairly: each slot that frees goes to the owner with the fewest running"
                    + " executions, and your own run oldest first (no more at once than your running cap, if the"
                    + " operator set one).";
        }
        return cancelled + "Attempt " + e.attempt() + " of " + e.maxAttempts() + " lost its worker (crashed, killed or"
                + " cut off from the database) before the command ended; it is queued to run again from the start as"
                + " attempt " + (e.attempt() + 1) + ", and its output will start over. Whatever the lost attempt did"
                + " outside the sandbox may have happened: submit with " + ch.field("maxAttempts") + " 1 for commands"
                + " that must not run twice." + (e.stdin().mode().open() ? " The next attempt starts with everything"
                + " written to its stdin so far." : "");
    }

    private static String earlierAttempts(Execution e) {
        if (retries(e) > 0) {
            return " It is retry " + retries(e) + " of " + e.retry().maxRetries() + " (" + e.retry().lastFailure()
                    + "); its output starts over.";
        }
        return e.attempt() <= 1 ? "" : " Earlier attempts lost their worker; this one runs the command again from the"
                + " start, and its output starts over.";
    }

    private static int retries(Execution e) {
        return e.retry() == null ? 0 : e.retry().retries();
    }

    private static final Pattern NETWORK_FAILURE = Pattern.compile(
            "Could not resolve host|Temporary failure in name resolution|Name or service not known"
                    + "|Network is unreachable|getaddrinfo failed|No address associated with hostname"
                    + "|Failed to establish a new connection");

    /** Whether the kept stderr names a failure that a run without network gets. */
    private static boolean networkFailure(Captured stderr) {
        String text = new String(stderr.head(), StandardCharsets.UTF_8) + "\n"
                + new String(stderr.tail(), StandardCharsets.UTF_8);
        return NETWORK_FAILURE.matcher(text).find();
    }

    /** Whether the kept stderr holds a refusal the node's egress proxy noted there. */
    private static boolean egressRefused(Captured stderr) {
        String text = new String(stderr.head(), StandardCharsets.UTF_8) + "\n"
                + new String(stderr.tail(), StandardCharsets.UTF_8);
        return text.contains("outrun egress: ") && text.contains(" refused: ");
    }

    /** Output capture always keeps a head and a tail; only retention leaves nothing of bytes that were there. */
    private static boolean nothingKept(Captured stream) {
        return stream.head().length == 0 && stream.tail().length == 0;
    }

    private String failed(Execution e, Channel ch) {
        String code = e.errorCode() == null ? "" : e.errorCode();
        return switch (code) {
            case "command_failed" -> commandFailed(e, ch);
            case "lease_expired" -> (e.maxAttempts() == 1 ? "Its worker was lost (crashed, killed, or cut off from the"
                    + " database) and, as asked with maxAttempts 1, it was not run again; the command may have run in"
                    + " part. Check what it changed before you submit it again;"
                    : "Every attempt lost its worker (crashed, killed, or cut off from the database). Submit it again;")
                    + " if it keeps failing this way the command may be exhausting its worker (memory,"
                    + " processes): make it lighter or split it.";
            case "sandbox_error" -> "The sandbox could not run the command (see error.message). Check image and"
                    + " workdir, then submit again.";
            case "sandbox_lost" -> "Its container was ended from outside on every attempt (the Docker engine restarted,"
                    + " or an operator stopped it; error.message says which): the command did not fail by itself and may"
                    + " have run in part. Check what it changed, then submit it again; the operator should check the"
                    + " workers' Docker engines.";
            case "image_not_allowed" -> "The operator does not allow that image. Submit again without "
                    + ch.field("image") + " to use the default sandbox image.";
            case "image_not_found" -> "The image you named is not on the workers. Submit again without "
                    + ch.field("image") + " to use the default sandbox image.";
            case "out_of_memory" -> "The kernel killed the command for memory: it used more than the sandbox's limit"
                    + " (error.message names it). Make it use less (smaller inputs, stream instead of loading everything,"
                    + " fewer parallel jobs) or split it into several executions, then submit again; or ask for more with "
                    + ch.field("memoryMb") + " (container runs, up to the operator's maximum).";
            default -> "It failed (see error). Fix what the message names and submit it again.";
        };
    }

    /**
     * The note of a run one of whose processes the kernel killed for memory while the command
     * went on (its exit is its own): what happened, and what to do about it.
     */
    private static String memoryKill(Execution e) {
        String message = e.errorMessage();
        if (message == null || !message.contains(Outcome.MEMORY_KILL_NOTE)) {
            return "";
        }
        String note = message.substring(message.indexOf(Outcome.MEMORY_KILL_NOTE));
        return " " + note + " Its output may be incomplete: make that step use less memory (smaller inputs, streaming,"
                + " fewer parallel jobs) or split the work.";
    }

    /** What sandbox/image/build.sh puts in the default image (keep the two together). */
    static final String DEFAULT_IMAGE_TOOLS = "bash, coreutils, git, make, gcc/g++, python3 with pip and venv,"
            + " node with npm, curl, jq, zip/unzip, tar/xz/gzip/bzip2, procps, file, patch, diff, sed, gawk, grep and socat";

    private String commandFailed(Execution e, Channel ch) {
        String text = "The command exited with code " + e.exitCode() + "." + memoryKill(e);
        if (e.exitCode() != null && e.exitCode() == 137) {
            // The engine did not flag an OOM kill (those end out_of_memory): something sent SIGKILL.
            text += " 137 means it was killed with SIGKILL (not by the memory limit, which ends out_of_memory): by"
                    + " itself, a process it started, or an operator.";
        }
        if (e.exitCode() != null && e.exitCode() == 127) {
            text += " 127 means a command was not found: that tool is not in the sandbox ("
                    + (e.image() == null ? "the default sandbox image, which has " + DEFAULT_IMAGE_TOOLS
                            : "the image " + e.image())
                    + "; or the host's PATH when the workers run host processes). Use what it has, bring the tool in "
                    + ch.field("files") + " or a " + ch.field("workspace") + ", or submit with " + ch.field("image")
                    + " naming one the operator allows that has it.";
        } else if (e.exitCode() != null && e.exitCode() == 126) {
            text += " 126 means a file was found but could not be executed: make it executable (chmod +x, or a"
                    + " file's mode) or run it through its interpreter (bash script.sh, python3 script.py).";
        }
        if (egressRefused(e.stderr())) {
            text += " Its stderr shows the egress proxy refused a host (named there): a run reaches only the hosts"
                    + " the operator allows with --egress-allow; ask for that host, or pass what it fetched as "
                    + ch.field("files") + ".";
        } else if (networkFailure(e.stderr())) {
            text += " Its stderr shows a network failure: runs have no network unless the operator allows it, so"
                    + " downloads and package installs fail. Pass what it needs as " + ch.field("files") + " (or keep it"
                    + " in a " + ch.field("workspace") + "), or ask the operator for network access.";
        }
        boolean err = e.stderr().totalBytes() > 0;
        boolean out = e.stdout().totalBytes() > 0;
        if (err) {
            text += " Read stderr" + (out ? " (and stdout)" : "") + ",";
        } else if (out) {
            text += " It printed nothing on stderr; read stdout,";
        } else {
            text += " It printed nothing at all; add `set -x` or echo statements to see where it stops,";
        }
        return text + " fix the command, and submit it again as a new execution.";
    }

    /** After a stdin write: where the command's answer is read. */
    String forStdinWrite(UUID id, boolean eof, String cursor, Channel ch) {
        return (eof ? "Written, and stdin closed: the command reads end of file after these bytes. "
                : "Written: the command reads these bytes in order, after any written before. ")
                + "Its answer: " + ch.follow(id, cursor, config.maxWaitMs()) + " returns what it printed since (as soon"
                + " as it prints). If its worker is lost, the next attempt starts with everything written so far.";
    }

    String forOutput(Execution e, boolean done, boolean more, String cursor) {
        return forOutput(e, done, more, cursor, Channel.HTTP);
    }

    String forOutput(Execution e, boolean done, boolean more, String cursor, Channel ch) {
        if (more) {
            return "This page stopped at maxBytes and more output is already there: " + ch.follow(e.id(), cursor,
                    config.maxWaitMs()) + " at once (with the same maxBytes) gives the next page; no byte is skipped or"
                    + " repeated.";
        }
        if (done) {
            return "Finished (" + e.status().wire() + "); this is the last of its output. " + ch.show(e.id())
                    + " shows exit code and any error.";
        }
        return "More may come: " + ch.follow(e.id(), cursor, config.maxWaitMs()) + " answers as soon as new output is"
                + " printed or the command ends.";
    }
}
