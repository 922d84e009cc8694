package io.outrun.http;

import io.outrun.execution.Execution;
import io.outrun.sandbox.capture.Captured;

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
        String id = e.id().toString();
        String follow = "GET /v1/executions/" + id + "/output?waitMs=" + config.maxWaitMs()
                + " (then pass back each answer's cursor) streams only output you have not seen";
        String poll = "GET /v1/executions/" + id + "?waitMs=" + config.maxWaitMs() + " answers as soon as it ends";
        String cancel = "POST /v1/executions/" + id + "/cancel stops it";
        String text = switch (e.status()) {
            case QUEUED -> (e.cancelRequested() ? "Cancel requested. " : "")
                    + "Queued; a worker starts it within seconds. Do not wait idle: continue other work, then check back. "
                    + poll + "; " + follow + "; " + cancel + ".";
            case RUNNING -> (e.cancelRequested() ? "Cancel requested; the worker kills it within seconds. " : "")
                    + "Running (attempt " + e.attempt() + " of " + e.maxAttempts() + "). Do not wait idle: continue other"
                    + " work, then check back. " + poll + "; " + follow + "; " + cancel + ".";
            case SUCCEEDED -> "Finished with exit code 0; stdout and stderr hold its output.";
            case FAILED -> failed(e);
            case TIMED_OUT -> "Killed at its timeout of " + e.timeoutMs() + " ms. Resubmit with a larger timeoutMs (this"
                    + " server allows up to " + config.maxTimeoutMs() + " ms), split the work into smaller steps, or save"
                    + " progress to files so a re-run can resume.";
            case CANCELLED -> "Cancelled by its owner. Submit it again if it is still needed.";
        };
        if (nothingKept(e.stdout()) && nothingKept(e.stderr()) && e.stdout().totalBytes() + e.stderr().totalBytes() > 0) {
            text += " Its stored output was removed by retention (outrun prune) after it ended; byte counts remain.";
        } else if (e.stdout().truncated() || e.stderr().truncated()) {
            text += " Output was truncated: the first and last bytes are kept and the middle is marked as dropped."
                    + " Resubmit with a larger maxOutputBytes (up to " + config.maxOutputBytes() + ") or write bulky"
                    + " output to a file and print a summary.";
        }
        return text;
    }

    /** Output capture always keeps a head and a tail; only retention leaves nothing of bytes that were there. */
    private static boolean nothingKept(Captured stream) {
        return stream.head().length == 0 && stream.tail().length == 0;
    }

    private String failed(Execution e) {
        String code = e.errorCode() == null ? "" : e.errorCode();
        return switch (code) {
            case "command_failed" -> "The command exited with code " + e.exitCode() + ". Read stderr (and stdout), fix"
                    + " the command, and submit it again as a new execution.";
            case "lease_expired" -> "Every attempt lost its worker (crashed, killed, or cut off from the database)."
                    + " Submit it again; if it keeps failing this way the command may be exhausting its worker (memory,"
                    + " processes): make it lighter or split it.";
            case "sandbox_error" -> "The sandbox could not run the command (see error.message). Check image and"
                    + " workdir, then submit again.";
            case "image_not_allowed" -> "The operator does not allow that image. Submit again without `image` to use"
                    + " the default sandbox image.";
            case "image_not_found" -> "The image you named is not on the workers. Submit again without `image` to use"
                    + " the default sandbox image.";
            default -> "It failed (see error). Fix what the message names and submit it again.";
        };
    }

    String forOutput(Execution e, boolean done, String cursor) {
        if (done) {
            return "Finished (" + e.status().wire() + "); this is the last of its output. GET /v1/executions/" + e.id()
                    + " shows exit code and any error.";
        }
        return "More may come: call again with cursor=" + cursor + "&waitMs=" + config.maxWaitMs()
                + "; the answer comes as soon as new output is printed or the command ends.";
    }
}
