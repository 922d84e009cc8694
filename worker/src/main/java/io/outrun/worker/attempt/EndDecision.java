package io.outrun.worker.attempt;

import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Retry;
import io.outrun.core.identity.IdentityUnavailableException;
import io.outrun.core.secrets.SecretUnavailableException;
import io.outrun.core.store.Outcome;
import io.outrun.core.store.OutputUpdate;
import io.outrun.sandbox.Exit;
import io.outrun.sandbox.ImageNotAllowedException;
import io.outrun.sandbox.ImageNotFoundException;
import io.outrun.sandbox.RunRefusedException;
import io.outrun.sandbox.SandboxException;
import io.outrun.worker.attempt.AttemptEnd.Abandoned;
import io.outrun.worker.attempt.AttemptEnd.Drained;
import io.outrun.worker.attempt.AttemptEnd.Finished;
import io.outrun.worker.attempt.AttemptEnd.HandedBack;
import io.outrun.worker.attempt.AttemptEnd.LeaseLost;
import io.outrun.worker.attempt.AttemptEnd.Retried;
import io.outrun.worker.lease.Attempt;
import java.time.Duration;

/**
 * The one place that decides how an attempt ends ({@link AttemptEnd}), retry included, from
 * plain values the run's lifecycle gathered: no I/O, no store, no clock. Whether a re-drive or a
 * hand-back still has attempts (or hand-backs) left is not decided here: the fenced statement
 * that writes it decides that with the row it changes ({@code core.store.Departure}).
 */
final class EndDecision {

    /** How long an execution handed back by a node waits before its next claim. */
    static final Duration RETRY_DELAY = Duration.ofSeconds(5);
    /** As {@link #RETRY_DELAY} while the node's engine is away: 20 hand-backs then span over 5 minutes. */
    static final Duration ENGINE_AWAY_RETRY_DELAY = Duration.ofSeconds(15);

    private final String node;
    private final Duration ttl;

    /** {@code ttl}: the node's lease ttl, the least a lost run's next attempt waits. */
    EndDecision(String node, Duration ttl) {
        this.node = node;
        this.ttl = ttl;
    }

    /** An attempt's end and the line its node logs about it (null: none), {@code "execution <id>: "} first. */
    record Decided(AttemptEnd end, Note note) {
    }

    /** A line for the operator: at warn or error level, with the failure's stack when {@code cause} is set. */
    record Note(boolean error, String text, Throwable cause) {
    }

    /**
     * What the lifecycle saw of a started run.
     *
     * @param exit            its exit to write as its end; null when it has none to write: its lease
     *                        was lost, its kill switch fired, its draining node killed it
     * @param drainedAway     no exit because its node's drain time killed it (the lease still held)
     * @param deadConfirmed   a drained-away run was seen dead since
     * @param sandboxLost     what the sandbox said when it lost sight of the run (null: it did not)
     * @param interrupted     the node stops
     * @param cancelRequested its owner asked to cancel it
     * @param output          the output not yet stored and the totals it reaches, written with the end
     * @param memoryBytes     the run's memory limit (0: none)
     * @param timeoutMs       the execution's timeout
     */
    record Seen(Exit exit, boolean drainedAway, boolean deadConfirmed, String sandboxLost, boolean interrupted,
                boolean cancelRequested, Attempt.Last output, long memoryBytes, long timeoutMs) {

        static Seen waited(Exit exit, boolean drainedAway, boolean deadConfirmed, boolean cancelRequested,
                           Attempt.Last output, long memoryBytes, long timeoutMs) {
            return new Seen(exit, drainedAway, deadConfirmed, null, false, cancelRequested, output, memoryBytes, timeoutMs);
        }

        static Seen lostBySandbox(String why) {
            return new Seen(null, false, false, why, false, false, null, 0, 0);
        }

        static Seen interruption() {
            return new Seen(null, false, false, null, true, false, null, 0, 0);
        }
    }

    /** The end of a run that started, retried when {@code retry} (null: none) covers its failure. */
    AttemptEnd ran(Seen seen, Retry retry) {
        if (seen.sandboxLost() != null) {
            // Not the command's fault. The run may still live: its next attempt waits at least a
            // ttl, by when the run's kill switch has ended it (its lease is released, never renewed).
            return new Abandoned("The sandbox lost the run: " + seen.sandboxLost(), lostPause());
        }
        if (seen.interrupted()) {
            // The node stops: the lease decides what happens next (the run is killed and removed).
            return new LeaseLost("interrupted on " + node + " (the node stops); its lease will expire");
        }
        Exit exit = seen.exit();
        if (exit == null && seen.drainedAway()) {
            // Never hand back a run that may live: its lease lapses and the sweep decides.
            return seen.deadConfirmed() ? new Drained()
                    : new LeaseLost("the drained run is not confirmed dead; its lease will expire");
        }
        if (exit == null) {
            return new LeaseLost("lease lost");
        }
        if (exit.lost()) {
            // The engine or an operator ended the container, not the command: exit code
            // meaningless, attempt lost, re-driven like a dead worker's.
            return new Abandoned(capitalized(exit.lostTo()), lostPause());
        }
        return retriedOr(new Finished(outcome(seen)), retry);
    }

    /** The end of a run the sandbox would not start ({@code e}), with the operator's line about it. */
    Decided refused(RuntimeException e, boolean defaultImage, boolean engineUp, Retry retry) {
        if (e instanceof ImageNotFoundException missing) {
            if (defaultImage) {
                // The node's own default image vanished: another node may still have it.
                return new Decided(new HandedBack("the default image " + missing.image() + " is missing on node " + node,
                        RETRY_DELAY), new Note(true, "this node's default image " + missing.image() + " is gone; handing it back",
                        null));
            }
            // The request named an image no worker offers: the caller's to fix, not to retry.
            return failed("image_not_found", "The image '" + missing.image() + "' does not exist on the worker's Docker"
                    + " engine. Submit without `image` to use the default sandbox image, or ask the operator which"
                    + " images are available.", retry);
        }
        if (e instanceof ImageNotAllowedException notAllowed) {
            return failed("image_not_allowed", "The image '" + notAllowed.image() + "' is not allowed on the workers ("
                    + notAllowed.getMessage() + "). Submit without `image` to use the default sandbox image.", retry);
        }
        if (e instanceof SecretUnavailableException) {
            // Gone, or this node cannot open it: the message names the secret and what to do, never its value.
            return failed("secret_unavailable", "The execution's secrets could not be given to it: " + e.getMessage(), retry);
        }
        if (e instanceof IdentityUnavailableException) {
            // Never run without the identity it asked for: what it would call would refuse it anyway.
            return failed("identity_unavailable", "The execution asked for an identity, but its node cannot sign one: "
                    + e.getMessage() + ". Ask the operator, or submit without `identity`.", retry);
        }
        if (e instanceof RunRefusedException || e instanceof IllegalArgumentException) {
            // The sandbox refuses the run as specified, or the stored execution cannot become a
            // valid run (a limit out of range): retrying won't help.
            return failed("sandbox_error", "The sandbox refused the execution: " + e.getMessage(), retry);
        }
        if (e instanceof SandboxException) {
            // The command never ran: handed back without spending an attempt. If the engine did
            // start a container after all, its epoch is never live again: the clean-up removes it.
            if (engineUp) {
                return new Decided(new HandedBack(e.getMessage(), RETRY_DELAY),
                        new Note(true, "the sandbox could not start it; handing it back", e));
            }
            // The engine is away (restarting, upgrading): expected, and hand-backs are counted,
            // so space them out to outlast an engine restart rather than spend them in a minute.
            return new Decided(new HandedBack(e.getMessage(), ENGINE_AWAY_RETRY_DELAY),
                    new Note(false, "the sandbox's engine is away (" + e.getMessage() + "); handing it back", null));
        }
        // A bug or an unexpected failure before the run existed: nothing is written, its lease
        // expires and the sweep re-drives the execution.
        return new Decided(new LeaseLost("its run could not be started: " + e),
                new Note(true, "its run could not be started", e));
    }

    private static Decided failed(String code, String message, Retry retry) {
        return new Decided(retriedOr(new Finished(Outcome.withoutOutput(ExecutionStatus.FAILED, null, code, message)), retry),
                null);
    }

    /** A failure its submission asked to retry runs again, after its backoff; any other end stands. */
    static AttemptEnd retriedOr(Finished end, Retry retry) {
        Outcome outcome = end.outcome();
        if (retry == null || !retry.applies(outcome.errorCode())) {
            return end;
        }
        return new Retried(outcome, retry.nextBackoff(), retry.retries() + 1, retry.maxRetries());
    }

    /**
     * A started attempt the sandbox lost is claimable again only after a lease ttl: a container
     * the engine could not confirm stopped has killed itself by then (its kill switch), so it never
     * runs beside its next attempt.
     */
    private Duration lostPause() {
        return ttl.compareTo(RETRY_DELAY) > 0 ? ttl : RETRY_DELAY;
    }

    private static Outcome outcome(Seen seen) {
        Exit exit = seen.exit();
        long memoryBytes = seen.memoryBytes();
        // The totals of the very bytes written with the end (more may arrive meanwhile).
        OutputUpdate last = seen.output().update();
        long out = seen.output().stdoutTotal();
        long err = seen.output().stderrTotal();
        if (exit.timedOut()) {
            return new Outcome(ExecutionStatus.TIMED_OUT, exit.exitCode(), "timed_out",
                    "The command ran past its timeout of " + seen.timeoutMs() + " ms and was killed. Raise timeoutMs"
                            + " (within the server's maximum) or split the work.", last, out, err);
        }
        if (exit.oomKilled()) {
            return new Outcome(ExecutionStatus.FAILED, exit.exitCode(), "out_of_memory",
                    "The command was killed by the kernel for using more memory than the sandbox's limit"
                            + (memoryBytes > 0 ? " (" + (memoryBytes >> 20) + " MiB)" : "") + ". Use less memory (smaller inputs, streaming instead of loading"
                            + " everything) or ask the operator for a larger limit.", last, out, err);
        }
        if (seen.cancelRequested() && exit.killed()) {
            return new Outcome(ExecutionStatus.CANCELLED, exit.exitCode(), "cancelled",
                    "Cancelled by its owner while running; the command was killed.", last, out, err);
        }
        // A child killed for memory inside a script that went on: its exit stands, with a note.
        String memory = !exit.memoryKill() ? "" : Outcome.MEMORY_KILL_NOTE
                + (memoryBytes > 0 ? " (" + (memoryBytes >> 20) + " MiB)" : "") + "; the command went on without it.";
        if (exit.exitCode() == 0) {
            return new Outcome(ExecutionStatus.SUCCEEDED, 0, null, memory.isEmpty() ? null : memory, last, out, err);
        }
        return new Outcome(ExecutionStatus.FAILED, exit.exitCode(), "command_failed",
                "The command exited with code " + exit.exitCode() + (err == 0 ? "; it wrote nothing to stderr." : "; see stderr.")
                        + (memory.isEmpty() ? "" : " " + memory), last, out, err);
    }

    private static String capitalized(String sentence) {
        return sentence.isEmpty() ? sentence : Character.toUpperCase(sentence.charAt(0)) + sentence.substring(1);
    }
}
