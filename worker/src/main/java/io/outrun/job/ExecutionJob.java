package io.outrun.job;

import io.outrun.dispatch.Dispatcher;
import io.outrun.dispatch.OnboardingGate;
import io.outrun.owner.HeldWork;
import io.outrun.workdir.WorkdirBridge;
import io.outrun.dispatch.ExecutionRunner;
import io.outrun.execution.Execution;
import io.outrun.execution.ExecutionStatus;
import io.outrun.lease.Attempt;
import io.outrun.lease.LeaseKeeper;
import io.outrun.logging.ExecutionMdc;
import io.outrun.metrics.NodeMetrics;
import io.outrun.sandbox.Exit;
import io.outrun.sandbox.ImageNotAllowedException;
import io.outrun.sandbox.ImageNotFoundException;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunRefusedException;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxException;
import io.outrun.store.Channels;
import io.outrun.store.Lease;
import io.outrun.store.LeaseStore;
import io.outrun.store.Outage;
import io.outrun.store.Outcome;
import io.outrun.store.OutputUpdate;
import io.outrun.store.RedriveStore;
import io.outrun.store.Redriven;
import io.outrun.store.StoreException;
import io.outrun.store.SubmissionStore;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The body of every execution job: claim the row, run the command in the sandbox under a lease,
 * write the end with one fenced statement. Runs on a JobRunr worker thread of this node.
 */
public final class ExecutionJob implements ExecutionRunner {

    private static final Logger LOG = LoggerFactory.getLogger(ExecutionJob.class);
    private static final Duration TICK = Duration.ofMillis(200);

    private final LeaseStore leases;
    private final RedriveStore redrives;
    private final SubmissionStore submissions;
    private final Sandbox sandbox;
    private final LeaseKeeper keeper;
    private final String node;
    private final Duration ttl;
    private final Function<Execution, RunSpec> specs;
    private final Dispatcher dispatcher;
    private final HeldWork held;
    private final WorkdirBridge workdirs;
    private final NodeMetrics metrics;
    private final JobOutcome outcomes;

    /** How long an execution given back by a node waits before its next attempt. */
    static final Duration RETRY_DELAY = Duration.ofSeconds(5);
    /** As {@link #RETRY_DELAY} while the node's engine is away: 20 hand-backs then span over 5 minutes. */
    static final Duration ENGINE_AWAY_RETRY_DELAY = Duration.ofSeconds(15);

    /**
     * @param specs turns a claimed execution into what the sandbox runs (limits, image, env policy)
     */
    public ExecutionJob(LeaseStore leases, RedriveStore redrives, SubmissionStore submissions, Dispatcher dispatcher,
                        Sandbox sandbox, LeaseKeeper keeper, String node, Duration ttl,
                        Function<Execution, RunSpec> specs, NodeMetrics metrics, JobOutcome outcomes, HeldWork held,
                        WorkdirBridge workdirs) {
        this.workdirs = workdirs;
        this.held = held;
        this.metrics = metrics;
        this.outcomes = outcomes;
        this.dispatcher = dispatcher;
        this.leases = leases;
        this.redrives = redrives;
        this.submissions = submissions;
        this.sandbox = sandbox;
        this.keeper = keeper;
        this.node = node;
        this.ttl = ttl;
        this.specs = specs;
    }

    /** Runs the execution, then ends the JobRunr job as the execution ended (see {@link JobOutcome}). */
    @Override
    public void run(UUID executionId) throws InterruptedException {
        try {
            JobOutcome.ThisJob job = outcomes.begin(executionId);
            execute(executionId, job);
            job.end();
        } finally {
            // JobRunr onboards on this thread next; the gate decides whether that queries.
            OnboardingGate.jobEnding();
        }
    }

    private void execute(UUID executionId, JobOutcome.ThisJob job) throws InterruptedException {
        if (keeper.isDraining()) {
            // This node drains: it claims nothing more. A new dispatch carries the work elsewhere.
            redrives.redispatch(executionId).ifPresent(e -> {
                dispatcher.enqueue(e.id(), e.dispatchSeq(), e.owner(), e.command(), e.attempt() + 1);
                dispatcher.wake();
            });
            return;
        }
        long sent = System.nanoTime();
        LeaseStore.Claim claim = leases.claim(executionId, keeper.incarnation(), ttl, held.limits().maxRunning());
        if (claim.execution().isEmpty()) {
            if (claim.held()) {
                // Its owner runs as many as its cap allows, or another run has its workspace: it waits
                // held, released as one of them ends.
                LOG.info("execution {}: its owner is at its running cap or its workspace is in use; held until a run"
                        + " ends", executionId);
                job.held();
            } else {
                // Someone else has it, it was cancelled, or it ended: nothing to do.
                LOG.debug("execution {} not claimable by {}", executionId, node);
            }
            return;
        }
        Execution execution = claim.execution().get();
        job.claimed(execution);
        if (claim.ownerHasHeld()) {
            // This claim left room in its owner's window: the owner's next held execution takes it.
            held.releaseSoon(execution.owner());
        }
        // Every log line of this run carries its execution, owner and attempt (SLF4J MDC).
        try (ExecutionMdc tag = ExecutionMdc.put(executionId, execution.owner(), execution.attempt())) {
            runClaimed(execution, claim.hasInputs(), sent, job);
        } finally {
            // A slot of this owner freed (whatever the end): under a cap, its next held one may run.
            // Asked anew, not from the claim's answer: work may have been held since the claim.
            held.releaseIfHeldSoon(execution.owner());
        }
    }

    private void runClaimed(Execution execution, boolean hasInputs, long sent, JobOutcome.ThisJob job) throws InterruptedException {
        UUID executionId = execution.id();
        Attempt attempt = keeper.begin(execution, sent);
        Lease lease = attempt.lease();
        LOG.info("execution {} attempt {}/{} (epoch {}) started on {}", executionId, execution.attempt(),
                execution.maxAttempts(), lease.epoch(), node);
        Run run;
        long memoryBytes = 0;
        WorkdirBridge.Prepared files;
        try {
            files = workdirs.prepare(execution, hasInputs);
            RunSpec spec = specs.apply(execution).withLeaseFile(keeper.leaseFile(lease)).withFiles(files.files());
            memoryBytes = spec.limits().memoryBytes();
            run = sandbox.start(spec);
        } catch (ImageNotFoundException e) {
            keeper.end(attempt);
            if (execution.image() == null) {
                // The node's own default image vanished: another node may still have it.
                LOG.error("execution {}: this node's default image {} is gone; handing it back", executionId, e.image());
                metrics.handedBack();
                requeue(leases.handBack(lease, "the default image " + e.image() + " is missing on node " + node), lease);
            } else {
                // The request named an image no worker offers: the caller's to fix, not to retry.
                finish(attempt, Outcome.withoutOutput(ExecutionStatus.FAILED, null, "image_not_found",
                        "The image '" + e.image() + "' does not exist on the worker's Docker engine. Submit without"
                                + " `image` to use the default sandbox image, or ask the operator which images are"
                                + " available."));
            }
            return;
        } catch (ImageNotAllowedException e) {
            keeper.end(attempt);
            finish(attempt, Outcome.withoutOutput(ExecutionStatus.FAILED, null, "image_not_allowed",
                    "The image '" + e.image() + "' is not allowed on the workers (" + e.getMessage() + "). Submit without"
                            + " `image` to use the default sandbox image."));
            return;
        } catch (RunRefusedException | IllegalArgumentException e) {
            // The sandbox refuses the run as specified, or the stored execution cannot become a
            // valid run (a limit out of range): retrying won't help.
            keeper.end(attempt);
            finish(attempt, Outcome.withoutOutput(ExecutionStatus.FAILED, null, "sandbox_error",
                    "The sandbox refused the execution: " + e.getMessage()));
            return;
        } catch (SandboxException e) {
            keeper.end(attempt);
            // The command never ran: hand it back without spending an attempt. If the engine did
            // start a container after all, its epoch is never live again: the clean-up removes it.
            metrics.handedBack();
            if (sandbox.engineUp()) {
                LOG.error("execution {}: the sandbox could not start it; handing it back", executionId, e);
                requeue(leases.handBack(lease, e.getMessage()), lease);
            } else {
                // The engine is away (restarting, upgrading): expected, and hand-backs are counted,
                // so space them out to outlast an engine restart rather than spend them in a minute.
                LOG.warn("execution {}: the sandbox's engine is away ({}); handing it back", executionId, e.getMessage());
                requeue(leases.handBack(lease, e.getMessage()), lease, ENGINE_AWAY_RETRY_DELAY);
            }
            return;
        } catch (RuntimeException e) {
            // A bug or an unexpected failure before the run existed: forget the attempt (its lease
            // then expires and the sweep re-drives the execution) and let JobRunr log it.
            keeper.end(attempt);
            throw e;
        }
        keeper.started(attempt, run);
        try {
            Exit exit = awaitExit(attempt);
            if (exit == null && attempt.drained() && !attempt.leaseLost()) {
                // The node's drain time is up: the watchdog kills the run; hand it back once it is dead.
                if (!awaitDeath(run)) {
                    // Never hand back a run that may live: its lease lapses and the sweep decides.
                    LOG.error("{}: the drained run is not confirmed dead; its lease will expire", attempt);
                    return;
                }
                LOG.info("{} handed back by its draining node; no attempt spent", attempt);
                Optional<Redriven> back = leases.drainBack(lease);
                // Nothing is wrong with the work, only with where it ran: another node takes it now.
                back.filter(r -> r.status() == ExecutionStatus.QUEUED).ifPresent(r -> {
                    dispatcher.enqueue(r.id(), r.dispatchSeq(), r.owner(), r.command(), r.attempt() + 1);
                    dispatcher.wake();
                });
                back.ifPresent(r -> changed(lease.executionId()));
                return;
            }
            if (exit == null) {
                // Lease lost: the watchdog kills the run; close() removes it. Nothing more is written.
                LOG.warn("{}: {}; its run is killed and nothing of it is written", attempt, "lease lost");
                return;
            }
            if (!exit.lost()) {
                // Still under the lease (renewed while RUNNING): artifacts, full output and the
                // workspace are kept before the end is written, so whoever sees the end sees them.
                workdirs.collect(lease, execution, files.inputs(), run);
            }
            attempt.ending();
            if (exit.lost()) {
                // The engine or an operator ended the container, not the command: exit code
                // meaningless, attempt lost, re-driven like a dead worker's.
                LOG.warn("{}: {}; the attempt is lost (re-driven while attempts remain)", attempt, exit.lostTo());
                metrics.sandboxLost();
                loseToSandbox(lease, capitalized(exit.lostTo()));
                return;
            }
            Outcome outcome = outcome(execution, attempt, exit, memoryBytes);
            if (finish(attempt, outcome)) {
                job.wrote(outcome);
            }
        } catch (SandboxException e) {
            // The sandbox lost sight of the run (e.g. the Docker engine restarted): not the
            // command's fault. The run may still live: its next attempt waits at least a ttl, by
            // when the run's kill switch has ended it (its lease is released, so never renewed).
            LOG.error("{}: the sandbox lost the run; the attempt is lost", attempt, e);
            run.kill();
            metrics.sandboxLost();
            loseToSandbox(lease, "The sandbox lost the run: " + e.getMessage());
        } catch (InterruptedException e) {
            if (!job.deletedOnDashboard()) {
                // JobRunr stops (node shutdown): the lease decides what happens next, so write
                // nothing here (close() kills and removes the run).
                LOG.warn("{} interrupted on {}; its lease will expire", attempt, node);
                throw e;
            }
            cancelFromDashboard(attempt);
        } finally {
            run.close();
            keeper.end(attempt);
            if (files.inputs().workspace() != null) {
                // Its workspace is free again: a run of it held meanwhile may start now.
                held.releaseSoon(execution.owner());
            }
        }
    }

    /**
     * An admin deleted this job on the dashboard while its command ran (JobRunr interrupted us at
     * its steward's next poll): the admin meant to cancel it. Recorded first (a re-drive after a
     * crash of this node now ends it cancelled), then killed as an owner's cancel is, and its end
     * written as cancelled by an admin, on this attempt: no attempt spent, nothing re-driven.
     */
    private void cancelFromDashboard(Attempt attempt) throws InterruptedException {
        LOG.warn("{}: its JobRunr job was deleted on the dashboard; cancelling it", attempt);
        try {
            submissions.requestCancelAsOperator(attempt.lease().executionId(), JobOutcome.ADMIN_CANCEL);
        } catch (StoreException e) {
            LOG.warn("{}: could not record the dashboard's cancel ({}); killing it anyway", attempt, e.getMessage());
        }
        keeper.cancel(attempt.lease().executionId());
        Exit exit = awaitExit(attempt);
        if (exit == null) {
            return; // lease lost meanwhile: the sweep ends it (cancelled, since the request is recorded)
        }
        attempt.ending();
        Attempt.Last last = attempt.lastOutput();
        finish(attempt, new Outcome(ExecutionStatus.CANCELLED, exit.exitCode(), "cancelled", JobOutcome.ADMIN_CANCEL,
                last.update(), last.stdoutTotal(), last.stderrTotal()));
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

    private static Outcome outcome(Execution e, Attempt attempt, Exit exit, long memoryBytes) {
        // The totals of the very bytes written with the end (more may arrive meanwhile).
        Attempt.Last lastOutput = attempt.lastOutput();
        OutputUpdate last = lastOutput.update();
        long out = lastOutput.stdoutTotal();
        long err = lastOutput.stderrTotal();
        if (exit.timedOut()) {
            return new Outcome(ExecutionStatus.TIMED_OUT, exit.exitCode(), "timed_out",
                    "The command ran past its timeout of " + e.timeoutMs() + " ms and was killed. Raise timeoutMs"
                            + " (within the server's maximum) or split the work.", last, out, err);
        }
        if (exit.oomKilled()) {
            return new Outcome(ExecutionStatus.FAILED, exit.exitCode(), "out_of_memory",
                    "The command was killed by the kernel for using more memory than the sandbox's limit"
                            + (memoryBytes > 0 ? " (" + (memoryBytes >> 20) + " MiB)" : "") + ". Use less memory (smaller inputs, streaming instead of loading"
                            + " everything) or ask the operator for a larger limit.", last, out, err);
        }
        if (attempt.cancelRequested() && exit.killed()) {
            return new Outcome(ExecutionStatus.CANCELLED, exit.exitCode(), "cancelled",
                    "Cancelled by its owner while running; the command was killed.", last, out, err);
        }
        if (exit.exitCode() == 0) {
            return new Outcome(ExecutionStatus.SUCCEEDED, 0, null, null, last, out, err);
        }
        return new Outcome(ExecutionStatus.FAILED, exit.exitCode(), "command_failed",
                "The command exited with code " + exit.exitCode() + (err == 0 ? "; it wrote nothing to stderr." : "; see stderr."),
                last, out, err);
    }


    /**
     * Writes the end, retrying through a database outage for as long as it lasts: the command's
     * result is worth keeping, and the fence answers for us once the database is back (it rejects
     * the write if the execution was re-driven meanwhile). Only a node shutdown (an interrupt)
     * stops the retries, and then the lease decides. A failure that is not an outage is not
     * retried: the run is untracked, its lease expires and the sweep re-drives the execution.
     */
    /** True when the end was written (the fence accepted it). */
    private boolean finish(Attempt attempt, Outcome outcome) throws InterruptedException {
        Lease lease = attempt.lease();
        long pauseMs = 250;
        boolean written;
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    written = leases.finish(lease, outcome);
                    break;
                } catch (StoreException e) {
                    if (!Outage.is(e)) {
                        LOG.error("{}: its end cannot be written; its lease will expire and the sweep re-drives it",
                                attempt, e);
                        return false;
                    }
                    if (attempt.leaseLost()) {
                        LOG.warn("{}: writing its end failed through an outage longer than its lease; the sweep decides",
                                attempt);
                        return false;
                    }
                    LOG.warn("{}: writing its end failed ({}); retrying in {} ms", attempt, e.getMessage(), pauseMs);
                    // A stop of the job server interrupts us: the result is still worth writing
                    // while the lease lasts, so keep trying and pass the interrupt on after.
                    long until = System.nanoTime() + pauseMs * 1_000_000;
                    while (System.nanoTime() < until) {
                        try {
                            Thread.sleep(Math.max(1, (until - System.nanoTime()) / 1_000_000));
                        } catch (InterruptedException ie) {
                            interrupted = true;
                        }
                    }
                    pauseMs = Math.min(pauseMs * 2, 4000);
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        if (written) {
            metrics.ended(outcome.status());
            LOG.info("execution {} attempt {} ended {} (exit {})", lease.executionId(), lease.attempt(),
                    outcome.status().wire(), outcome.exitCode());
        } else {
            LOG.warn("{}: lease lost before the end was written; the write was fenced out", attempt);
        }
        return written;
    }

    /**
     * A started attempt the sandbox lost (the engine restarted, an operator stopped its container):
     * re-driven for another attempt, or with none left failed with {@code sandbox_lost}. The next
     * attempt waits at least a lease ttl: a container the engine could not confirm stopped has
     * killed itself by then (its kill switch), so it never runs beside its next attempt.
     */
    private void loseToSandbox(Lease lease, String why) {
        Duration delay = ttl.compareTo(RETRY_DELAY) > 0 ? ttl : RETRY_DELAY;
        requeue(leases.release(lease, "sandbox_lost", why + ". The attempt was lost, not the command's failure, and no"
                + " attempts remain; resubmit it (and have the operator check the node's Docker engine)."), lease, delay);
    }

    private static String capitalized(String sentence) {
        return sentence.isEmpty() ? sentence : Character.toUpperCase(sentence.charAt(0)) + sentence.substring(1);
    }

    private void requeue(Optional<Redriven> released, Lease lease) {
        requeue(released, lease, RETRY_DELAY);
    }

    private void requeue(Optional<Redriven> released, Lease lease, Duration delay) {
        if (released.isEmpty()) {
            return; // lease already lost: the sweep decided
        }
        Redriven r = released.get();
        if (r.status() == ExecutionStatus.QUEUED) {
            dispatcher.enqueueIn(delay, r.id(), r.dispatchSeq(), r.owner(), r.command(), r.attempt() + 1);
        }
        changed(lease.executionId());
    }

    private void changed(UUID id) {
        dispatcher.wake(Channels.CHANGED, id.toString()); // long polls re-read at least every second anyway
    }
}
