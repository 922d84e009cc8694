package io.outrun.worker.attempt;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Retry;
import io.outrun.core.identity.IdentityUnavailableException;
import io.outrun.core.secrets.SecretUnavailableException;
import io.outrun.core.store.Lease;
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
import io.outrun.worker.attempt.EndDecision.Seen;
import io.outrun.worker.lease.Attempt;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * How an attempt ends, as a table: what the node saw of its run (or why its sandbox would not
 * start it), with its retry policy, and the {@link AttemptEnd} that is written. No database, no
 * sandbox: the decision reads plain values only.
 */
class EndDecisionTest {

    private static final String NODE = "node-a";
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final EndDecision DECISION = new EndDecision(NODE, TTL);
    private static final EndDecision SHORT_TTL = new EndDecision(NODE, Duration.ofSeconds(2));

    private static final Lease LEASE = new Lease(UUID.fromString("00000000-0000-0000-0000-000000000001"), 7, 1, "node-a/1");
    private static final OutputUpdate LAST = new OutputUpdate(LEASE, List.of(), 0, 0);
    /** 12 bytes of stdout and 5 of stderr reached with the end. */
    private static final Attempt.Last OUTPUT = new Attempt.Last(LAST, 12, 5);
    private static final Attempt.Last SILENT = new Attempt.Last(LAST, 3, 0);
    private static final long MIB_256 = 256L << 20;

    /** Retries of command_failed: the second of two, after 1 s doubled once. */
    private static final Retry SECOND_OF_TWO = new Retry(2, 1000, List.of("command_failed"), 1, "attempt 1 ended");
    private static final Retry EXHAUSTED = new Retry(2, 1000, List.of("command_failed"), 2, "attempt 2 ended");
    private static final Retry ON_TIMEOUT = Retry.policy(3, 500, List.of("timed_out"));

    private static Seen exited(Exit exit, boolean cancelRequested, Attempt.Last output) {
        return Seen.waited(exit, false, false, cancelRequested, output, MIB_256, 60_000);
    }

    private static Outcome outcome(ExecutionStatus status, Integer exit, String code, String message, Attempt.Last output) {
        return new Outcome(status, exit, code, message, LAST, output.stdoutTotal(), output.stderrTotal());
    }

    private static final Outcome COMMAND_FAILED = outcome(ExecutionStatus.FAILED, 3, "command_failed",
            "The command exited with code 3; see stderr.", OUTPUT);
    private static final Outcome TIMED_OUT = outcome(ExecutionStatus.TIMED_OUT, 137, "timed_out",
            "The command ran past its timeout of 60000 ms and was killed. Raise timeoutMs (within the server's maximum)"
                    + " or split the work.", OUTPUT);

    static Stream<Arguments> runs() {
        return Stream.of(
                row("exit 0 succeeds", DECISION, exited(new Exit(0, false, false), false, OUTPUT), null,
                        new Finished(outcome(ExecutionStatus.SUCCEEDED, 0, null, null, OUTPUT))),
                row("a non-zero exit fails, pointing at stderr", DECISION, exited(new Exit(3, false, false), false, OUTPUT),
                        null, new Finished(COMMAND_FAILED)),
                row("a non-zero exit with an empty stderr says so", DECISION,
                        exited(new Exit(3, false, false), false, SILENT), null,
                        new Finished(outcome(ExecutionStatus.FAILED, 3, "command_failed",
                                "The command exited with code 3; it wrote nothing to stderr.", SILENT))),
                row("past its timeout", DECISION, exited(new Exit(137, true, true), false, OUTPUT), null,
                        new Finished(TIMED_OUT)),
                row("a timeout wins over a cancel", DECISION, exited(new Exit(137, true, true), true, OUTPUT), null,
                        new Finished(TIMED_OUT)),
                row("killed for memory", DECISION, exited(new Exit(137, false, false, true), false, OUTPUT), null,
                        new Finished(outcome(ExecutionStatus.FAILED, 137, "out_of_memory",
                                "The command was killed by the kernel for using more memory than the sandbox's limit"
                                        + " (256 MiB). Use less memory (smaller inputs, streaming instead of loading"
                                        + " everything) or ask the operator for a larger limit.", OUTPUT))),
                row("killed after its owner's cancel", DECISION, exited(new Exit(137, false, true), true, OUTPUT), null,
                        new Finished(outcome(ExecutionStatus.CANCELLED, 137, "cancelled",
                                "Cancelled by its owner while running; the command was killed.", OUTPUT))),
                row("a cancel asked as it exited by itself keeps its exit", DECISION,
                        exited(new Exit(0, false, false), true, OUTPUT), null,
                        new Finished(outcome(ExecutionStatus.SUCCEEDED, 0, null, null, OUTPUT))),
                row("a child killed for memory: its exit stands, with a note", DECISION,
                        exited(new Exit(0, false, false).withMemoryKill(true), false, OUTPUT), null,
                        new Finished(outcome(ExecutionStatus.SUCCEEDED, 0, null, Outcome.MEMORY_KILL_NOTE
                                + " (256 MiB); the command went on without it.", OUTPUT))),
                row("the engine ended its container: abandoned for a ttl", DECISION,
                        exited(Exit.lost(137, "stopped outside Outrun"), false, null), null,
                        new Abandoned("Stopped outside Outrun", TTL)),
                row("abandoned for at least the hand-back delay", SHORT_TTL,
                        exited(Exit.lost(137, "stopped outside Outrun"), false, null), null,
                        new Abandoned("Stopped outside Outrun", EndDecision.RETRY_DELAY)),
                row("the sandbox lost sight of it", DECISION, Seen.lostBySandbox("engine restarted"), null,
                        new Abandoned("The sandbox lost the run: engine restarted", TTL)),
                row("drained away and seen dead", DECISION, Seen.waited(null, true, true, false, null, 0, 0), null,
                        new Drained()),
                row("drained away, not seen dead", DECISION, Seen.waited(null, true, false, false, null, 0, 0), null,
                        new LeaseLost("the drained run is not confirmed dead; its lease will expire")),
                row("no exit to write: its lease is lost", DECISION, Seen.waited(null, false, false, true, null, 0, 0),
                        SECOND_OF_TWO, new LeaseLost("lease lost")),
                row("its node stops", DECISION, Seen.interruption(), null,
                        new LeaseLost("interrupted on node-a (the node stops); its lease will expire")),
                row("a failure its policy covers is retried after its backoff", DECISION,
                        exited(new Exit(3, false, false), false, OUTPUT), SECOND_OF_TWO,
                        new Retried(COMMAND_FAILED, Duration.ofSeconds(2), 2, 2)),
                row("no retry left: the failure stands", DECISION, exited(new Exit(3, false, false), false, OUTPUT),
                        EXHAUSTED, new Finished(COMMAND_FAILED)),
                row("a timeout its policy covers is retried", DECISION, exited(new Exit(137, true, true), false, OUTPUT),
                        ON_TIMEOUT, new Retried(TIMED_OUT, Duration.ofMillis(500), 1, 3)),
                row("a timeout a command_failed policy does not cover stands", DECISION,
                        exited(new Exit(137, true, true), false, OUTPUT), SECOND_OF_TWO, new Finished(TIMED_OUT)),
                row("a cancel is never retried", DECISION, exited(new Exit(137, false, true), true, OUTPUT), SECOND_OF_TWO,
                        new Finished(outcome(ExecutionStatus.CANCELLED, 137, "cancelled",
                                "Cancelled by its owner while running; the command was killed.", OUTPUT))),
                row("a success is never retried", DECISION, exited(new Exit(0, false, false), false, OUTPUT), SECOND_OF_TWO,
                        new Finished(outcome(ExecutionStatus.SUCCEEDED, 0, null, null, OUTPUT))),
                row("a lost attempt is not a retry", DECISION, exited(Exit.lost(137, "killed"), false, null), SECOND_OF_TWO,
                        new Abandoned("Killed", TTL)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("runs")
    void aRunEndsAsItWasSeen(String why, EndDecision decision, Seen seen, Retry retry, AttemptEnd expected) {
        assertThat(decision.ran(seen, retry)).isEqualTo(expected);
    }

    static Stream<Arguments> refusals() {
        SandboxException down = new SandboxException("cannot connect to the Docker daemon");
        return Stream.of(
                refusal("the node's default image is gone: handed back", new ImageNotFoundException("outrun/sandbox:1",
                        "no such image", null), true, true,
                        new HandedBack("the default image outrun/sandbox:1 is missing on node node-a", EndDecision.RETRY_DELAY)),
                refusal("an image no worker offers fails", new ImageNotFoundException("nope:1", "no such image", null),
                        false, true, failed("image_not_found", "The image 'nope:1' does not exist on the worker's Docker"
                                + " engine. Submit without `image` to use the default sandbox image, or ask the operator"
                                + " which images are available.")),
                refusal("an image not allowed fails", new ImageNotAllowedException("evil:1", "not in --allowed-images"),
                        false, true, failed("image_not_allowed", "The image 'evil:1' is not allowed on the workers (not in"
                                + " --allowed-images). Submit without `image` to use the default sandbox image.")),
                refusal("a secret it cannot be given fails", new SecretUnavailableException("secret 'db' is gone"), true,
                        true, failed("secret_unavailable", "The execution's secrets could not be given to it: secret 'db'"
                                + " is gone")),
                refusal("an identity its node cannot sign fails", new IdentityUnavailableException("no signing key"), true,
                        true, failed("identity_unavailable", "The execution asked for an identity, but its node cannot"
                                + " sign one: no signing key. Ask the operator, or submit without `identity`.")),
                refusal("a run the sandbox refuses as specified fails", new RunRefusedException("bad workdir"), true, true,
                        failed("sandbox_error", "The sandbox refused the execution: bad workdir")),
                refusal("a limit out of range fails", new IllegalArgumentException("pids < 1"), true, true,
                        failed("sandbox_error", "The sandbox refused the execution: pids < 1")),
                refusal("a sandbox that could not start it hands it back", down, true, true,
                        new HandedBack("cannot connect to the Docker daemon", EndDecision.RETRY_DELAY)),
                refusal("while its engine is away, after a longer pause", down, true, false,
                        new HandedBack("cannot connect to the Docker daemon", EndDecision.ENGINE_AWAY_RETRY_DELAY)),
                refusal("an unexpected failure writes nothing", new IllegalStateException("bug"), true, true,
                        new LeaseLost("its run could not be started: java.lang.IllegalStateException: bug")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusals")
    void aStartTheSandboxRefusedEndsByWhy(String why, RuntimeException e, boolean defaultImage, boolean engineUp,
                                          AttemptEnd expected) {
        // A retry policy covers the command's failures, never a refused start.
        assertThat(DECISION.refused(e, defaultImage, engineUp, SECOND_OF_TWO).end()).isEqualTo(expected);
    }

    private static Arguments row(String why, EndDecision decision, Seen seen, Retry retry, AttemptEnd expected) {
        return Arguments.of(why, decision, seen, retry, expected);
    }

    private static Arguments refusal(String why, RuntimeException e, boolean defaultImage, boolean engineUp,
                                     AttemptEnd expected) {
        return Arguments.of(why, e, defaultImage, engineUp, expected);
    }

    private static Finished failed(String code, String message) {
        return new Finished(Outcome.withoutOutput(ExecutionStatus.FAILED, null, code, message));
    }
}
