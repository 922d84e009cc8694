package io.outrun.worker.attempt;

import io.outrun.core.execution.Execution;
import io.outrun.core.logging.ExecutionMdc;
import io.outrun.core.trace.AttemptTrace;
import io.outrun.core.trace.Tracing;
import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxException;
import io.outrun.worker.attempt.EndDecision.Decided;
import io.outrun.worker.attempt.EndDecision.Note;
import io.outrun.worker.attempt.EndDecision.Seen;
import io.outrun.worker.lease.Attempt;
import io.outrun.worker.lease.LeaseKeeper;
import io.outrun.worker.lease.LeaseStore.Claimed;
import io.opentelemetry.api.trace.Span;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The life of one claimed attempt on this node: prepares its run ({@link RunPreparation}), starts
 * it under the claim's lease, waits for its end and gathers what was seen, has {@link EndDecision}
 * decide how the attempt ended, and has {@link EndWriter} write that, in that order.
 */
public final class AttemptRunner {

    private static final Logger LOG = LoggerFactory.getLogger(AttemptRunner.class);
    private static final Duration TICK = Duration.ofMillis(200);

    /** This node, as its attempts see it: its id, its lease ttl, its sandbox and the keeper of its leases. */
    public record Node(String id, Duration ttl, Sandbox sandbox, LeaseKeeper keeper) {
    }

    private final Node node;
    private final RunPreparation preparation;
    private final StdinFeeds stdin;
    private final EndDecision decision;
    private final EndWriter writer;

    public AttemptRunner(Node node, RunPreparation preparation, StdinFeeds stdin, EndWriter writer) {
        this.node = node;
        this.preparation = preparation;
        this.stdin = stdin;
        this.decision = new EndDecision(node.id(), node.ttl());
        this.writer = writer;
    }

    /**
     * Runs the claimed execution to its end on this thread. {@code claimSentNanos}: when its claim
     * was sent (the lease's local deadline counts from there); {@code claimEndNanos}: when it was
     * answered (the claim's span ends there).
     *
     * @return true when its owner has queued work that the slot it frees may take now (held back
     *         by the owner's running cap or this run's workspace): the node looks at once
     */
    public boolean run(Claimed claimed, long claimSentNanos, long claimEndNanos) {
        Execution execution = claimed.execution();
        writer.claimed(execution);
        AttemptTrace trace = AttemptTrace.begin(Tracing.process(), execution.trace(), execution.id(), execution.owner(),
                execution.attempt(), node.id(), execution.enqueuedAt(), claimSentNanos, claimEndNanos);
        // Every log line of this run carries its execution, owner and attempt (SLF4J MDC).
        try (ExecutionMdc tag = ExecutionMdc.put(execution.id(), execution.owner(), execution.attempt())) {
            Attempt attempt = node.keeper().begin(execution, claimSentNanos);
            attempt.traced(trace);
            LOG.info("execution {} attempt {}/{} (epoch {}) started on {}", execution.id(), execution.attempt(),
                    execution.maxAttempts(), attempt.lease().epoch(), node.id());
            return runClaimed(execution, attempt, claimed.hasInputs());
        } finally {
            trace.end("left", null, null); // no-op when the writer ended it as the attempt ended
        }
    }

    /**
     * Hands back a claim this node won as it stopped, before anything of it started: no attempt
     * spent, claimable again at once by another node; its job is retired, the next one enqueued.
     */
    public void handBackUnstarted(Claimed claimed) {
        writer.handBackUnstarted(claimed.execution());
    }

    /** Starts the run, awaits it, decides how it ended and writes that, in that order. */
    private boolean runClaimed(Execution execution, Attempt attempt, boolean hasInputs) {
        Run run;
        RunPreparation.Prepared prepared = preparation.begin(execution);
        Span starting = attempt.trace().step("sandbox.start");
        try {
            preparation.prepare(prepared, attempt, hasInputs);
            run = node.sandbox().start(prepared.spec());
        } catch (RuntimeException e) {
            AttemptTrace.failed(starting, e);
            starting.end();
            prepared.close();
            node.keeper().end(attempt);
            Decided refused = decision.refused(e, execution.image() == null, node.sandbox().engineUp(), execution.retry());
            log(execution, refused.note());
            return writer.apply(execution, attempt, refused.end());
        }
        starting.end();
        prepared.started(run);
        StdinFeeds.Feed feed = null;
        try {
            node.keeper().started(attempt, run);
            // A run with stdin open gets what its owner wrote, from the first byte (a re-run attempt too).
            feed = execution.stdin().mode().open() ? stdin.start(execution.id(), run) : null;
            return writer.apply(execution, attempt, decision.ran(await(execution, attempt, run, prepared), execution.retry()));
        } finally {
            // Each closed whatever the one before threw: no listener of the run outlives it.
            try {
                if (feed != null) {
                    feed.close();
                }
            } finally {
                try {
                    run.close();
                } finally {
                    try {
                        prepared.close(); // its egress connections and its way to the API end with it
                    } finally {
                        node.keeper().end(attempt);
                    }
                }
            }
        }
    }

    /** The operator's line about a start that failed, as the decision worded it. */
    private static void log(Execution execution, Note note) {
        if (note == null) {
            return;
        }
        if (note.error()) {
            LOG.error("execution {}: {}", execution.id(), note.text(), note.cause());
        } else {
            LOG.warn("execution {}: {}", execution.id(), note.text(), note.cause());
        }
    }

    /** Waits for the run and gathers, in order, what the decision reads of it. */
    private Seen await(Execution execution, Attempt attempt, Run run, RunPreparation.Prepared prepared) {
        try {
            Exit exit;
            Span command = attempt.trace().step("execution.command");
            try {
                exit = awaitExit(attempt);
                if (exit != null) {
                    command.setAttribute(AttemptTrace.EXIT_CODE, (long) exit.exitCode());
                }
            } finally {
                command.end();
            }
            // The node's drain time is up: the watchdog kills the run; it is handed back once dead.
            boolean drainedAway = exit == null && attempt.drained() && !attempt.leaseLost();
            if (drainedAway || exit == null) {
                // Lease lost: the watchdog kills the run; close() removes it. Nothing more is written.
                return Seen.waited(null, drainedAway, drainedAway && awaitDeath(run), false, null, 0, 0);
            }
            if (!exit.lost()) {
                // Still under the lease (renewed while RUNNING): artifacts, full output and the
                // workspace are kept before the end is written, so whoever sees the end sees them.
                prepared.collect(attempt, run);
            }
            attempt.ending();
            // The totals of the very bytes written with the end (more may arrive meanwhile).
            Attempt.Last last = exit.lost() ? null : attempt.lastOutput();
            return Seen.waited(exit, false, false, attempt.cancelRequested(), last, prepared.memoryBytes(),
                    execution.timeoutMs());
        } catch (SandboxException e) {
            // The sandbox lost sight of the run (e.g. the Docker engine restarted): not the command's fault.
            LOG.error("{}: the sandbox lost the run; the attempt is lost", attempt, e);
            run.kill();
            return Seen.lostBySandbox(e.getMessage());
        } catch (InterruptedException e) {
            // The node stops: the lease decides what happens next (close() kills and removes the run).
            Thread.currentThread().interrupt();
            return Seen.interruption();
        }
    }

    /** Waits (bounded) until a run being killed is dead; true when it is. */
    private static boolean awaitDeath(Run run) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < until) {
            if (run.awaitExit(TICK).isPresent()) {
                return true; // the watchdog re-sends the kill every second meanwhile
            }
        }
        return false;
    }

    /**
     * Null when the run must not be written as ended: its lease is lost, or its draining node
     * killed it (a run that exited by itself first keeps its own end).
     */
    private static Exit awaitExit(Attempt attempt) throws InterruptedException {
        while (true) {
            Optional<Exit> exit = attempt.run().awaitExit(TICK);
            if (attempt.leaseLost()) {
                return null;
            }
            if (exit.isPresent()) {
                if (attempt.killedBySwitch(exit.get())) {
                    attempt.loseLease("its kill switch fired: the lease could not be confirmed in time");
                    return null;
                }
                return attempt.drained() && exit.get().killed() ? null : exit.get();
            }
        }
    }
}
