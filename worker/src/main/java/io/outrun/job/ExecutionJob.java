package io.outrun.job;

import io.outrun.dispatch.Dispatcher;
import io.outrun.dispatch.ExecutionRunner;
import io.outrun.execution.Execution;
import io.outrun.execution.ExecutionStatus;
import io.outrun.lease.LeaseKeeper;
import io.outrun.lease.Attempt;
import io.outrun.store.OutputUpdate;
import io.outrun.metrics.NodeMetrics;
import io.outrun.notify.Channels;
import io.outrun.sandbox.Exit;
import io.outrun.sandbox.ImageNotAllowedException;
import io.outrun.sandbox.ImageNotFoundException;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunRefusedException;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxException;
import io.outrun.store.ExecutionStore;
import io.outrun.store.Lease;
import io.outrun.store.Outage;
import io.outrun.store.Outcome;
import io.outrun.store.Redriven;
import io.outrun.store.StoreException;
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

    private final ExecutionStore store;
    private final Sandbox sandbox;
    private final LeaseKeeper keeper;
    private final String node;
    private final Duration ttl;
    private final Function<Execution, RunSpec> specs;
    private final Dispatcher dispatcher;
    private final NodeMetrics metrics;
    private final JobOutcome outcomes;

    /** How long an execution given back by a node waits before its next attempt. */
    static final Duration RETRY_DELAY = Duration.ofSeconds(5);

    /**
     * @param specs turns a claimed execution into what the sandbox runs (limits, image, env policy)
     */
    public ExecutionJob(ExecutionStore store, Dispatcher dispatcher, Sandbox sandbox, LeaseKeeper keeper, String node,
                        Duration ttl, Function<Execution, RunSpec> specs, NodeMetrics metrics, JobOutcome outcomes) {
        this.metrics = metrics;
        this.outcomes = outcomes;
        this.dispatcher = dispatcher;
        this.store = store;
        this.sandbox = sandbox;
        this.keeper = keeper;
        this.node = node;
        this.ttl = ttl;
        this.specs = specs;
    }

    /** Runs the execution, then ends the JobRunr job as the execution ended (see {@link JobOutcome}). */
    @Override
    public void run(UUID executionId) throws InterruptedException {
        JobOutcome.ThisJob job = outcomes.begin(executionId);
        execute(executionId, job);
        job.end();
    }

    private void execute(UUID executionId, JobOutcome.ThisJob job) throws InterruptedException {
        long sent = System.nanoTime();
        Optional<Execution> claimed = store.claim(executionId, keeper.incarnation(), ttl);
        if (claimed.isEmpty()) {
            // Someone else has it, it was cancelled, or it ended: nothing to do.
            LOG.debug("execution {} not claimable by {}", executionId, node);
            return;
        }
        Execution execution = claimed.get();
        job.claimed(execution);
        Attempt attempt = keeper.begin(execution, sent);
        Lease lease = attempt.lease();
        LOG.info("execution {} attempt {}/{} (epoch {}) started on {}", executionId, execution.attempt(),
                execution.maxAttempts(), lease.epoch(), node);
        Run run;
        long memoryBytes = 0;
        try {
            RunSpec spec = specs.apply(execution).withLeaseFile(keeper.leaseFile(lease));
            memoryBytes = spec.limits().memoryBytes();
            run = sandbox.start(spec);
        } catch (ImageNotFoundException e) {
            keeper.end(attempt);
            if (execution.image() == null) {
                // The node's own default image vanished: another node may still have it.
                LOG.error("execution {}: this node's default image {} is gone; handing it back", executionId, e.image());
                metrics.handedBack();
                requeue(store.handBack(lease, "the default image " + e.image() + " is missing on node " + node), lease);
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
            LOG.error("execution {}: the sandbox could not start it; handing it back", executionId, e);
            metrics.handedBack();
            requeue(store.handBack(lease, e.getMessage()), lease);
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
            if (exit == null) {
                // Lease lost: the watchdog kills the run; close() removes it. Nothing more is written.
                LOG.warn("{}: {}; its run is killed and nothing of it is written", attempt, "lease lost");
                return;
            }
            attempt.ending();
            finish(attempt, outcome(execution, attempt, exit, memoryBytes));
        } catch (SandboxException e) {
            // The sandbox lost the run (e.g. the Docker engine restarted): not the command's fault.
            LOG.error("{}: the sandbox lost the run", attempt, e);
            run.kill();
            giveBack(lease, "The sandbox lost the run: " + e.getMessage());
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
            store.requestCancelAsOperator(attempt.lease().executionId(), JobOutcome.ADMIN_CANCEL);
        } catch (StoreException e) {
            LOG.warn("{}: could not record the dashboard's cancel ({}); killing it anyway", attempt, e.getMessage());
        }
        keeper.cancel(attempt.lease().executionId());
        Exit exit = awaitExit(attempt);
        if (exit == null) {
            return; // lease lost meanwhile: the sweep ends it (cancelled, since the request is recorded)
        }
        attempt.ending();
        finish(attempt, new Outcome(ExecutionStatus.CANCELLED, exit.exitCode(), "cancelled", JobOutcome.ADMIN_CANCEL,
                attempt.lastOutput(), attempt.run().stdout().totalBytes(), attempt.run().stderr().totalBytes()));
    }

    private static Exit awaitExit(Attempt attempt) throws InterruptedException {
        while (true) {
            Optional<Exit> exit = attempt.run().awaitExit(TICK);
            if (attempt.leaseLost()) {
                return null;
            }
            if (exit.isPresent()) {
                return exit.get();
            }
        }
    }

    private static Outcome outcome(Execution e, Attempt attempt, Exit exit, long memoryBytes) {
        OutputUpdate last = attempt.lastOutput();
        long out = attempt.run().stdout().totalBytes();
        long err = attempt.run().stderr().totalBytes();
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
    private void finish(Attempt attempt, Outcome outcome) throws InterruptedException {
        Lease lease = attempt.lease();
        long pauseMs = 250;
        boolean written;
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    written = store.finish(lease, outcome);
                    break;
                } catch (StoreException e) {
                    if (!Outage.is(e)) {
                        LOG.error("{}: its end cannot be written; its lease will expire and the sweep re-drives it",
                                attempt, e);
                        return;
                    }
                    if (attempt.leaseLost()) {
                        LOG.warn("{}: writing its end failed through an outage longer than its lease; the sweep decides",
                                attempt);
                        return;
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
    }

    /**
     * Hands the execution back for another attempt (on any node, after a short delay) or, with
     * none left, fails it with {@code sandbox_error}.
     */
    private void giveBack(Lease lease, String why) {
        requeue(store.release(lease, "sandbox_error", why
                + ". No attempts remain; resubmit once the node's sandbox is healthy."), lease);
    }

    private void requeue(Optional<Redriven> released, Lease lease) {
        if (released.isEmpty()) {
            return; // lease already lost: the sweep decided
        }
        Redriven r = released.get();
        if (r.status() == ExecutionStatus.QUEUED) {
            dispatcher.enqueueIn(RETRY_DELAY, r.id(), r.dispatchSeq(), r.owner(), r.command());
        }
        changed(lease.executionId());
    }

    private void changed(UUID id) {
        dispatcher.wake(Channels.CHANGED, id.toString()); // long polls re-read at least every second anyway
    }
}
