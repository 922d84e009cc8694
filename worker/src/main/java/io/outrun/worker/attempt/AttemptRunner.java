package io.outrun.worker.attempt;

import io.outrun.core.books.BookEntry;
import io.outrun.core.books.JobBooks;
import io.outrun.core.books.Summary;
import io.outrun.core.books.Books;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.JobIds;
import io.outrun.worker.lease.Attempt;
import io.outrun.worker.lease.LeaseKeeper;
import io.outrun.core.logging.ExecutionMdc;
import io.outrun.worker.metrics.NodeMetrics;
import io.outrun.worker.attempt.AttemptEnd.Abandoned;
import io.outrun.worker.attempt.AttemptEnd.Drained;
import io.outrun.worker.attempt.AttemptEnd.Finished;
import io.outrun.worker.attempt.AttemptEnd.HandedBack;
import io.outrun.worker.attempt.AttemptEnd.LeaseLost;
import io.outrun.sandbox.Exit;
import io.outrun.sandbox.ImageNotAllowedException;
import io.outrun.sandbox.ImageNotFoundException;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunRefusedException;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.Sandbox;
import io.outrun.sandbox.SandboxException;
import io.outrun.model.output.Captured;
import io.outrun.core.store.Channels;
import io.outrun.core.store.Lease;
import io.outrun.worker.lease.LeaseStore;
import io.outrun.worker.lease.LeaseStore.Claimed;
import io.outrun.core.store.Outage;
import io.outrun.core.store.Outcome;
import io.outrun.core.store.OutputStore;
import io.outrun.core.store.OutputUpdate;
import io.outrun.core.store.Redriven;
import io.outrun.core.store.StoreException;
import io.outrun.core.store.SubmissionStore;
import io.outrun.worker.workdir.WorkdirBridge;
import io.opentelemetry.api.trace.Span;
import io.outrun.core.trace.AttemptTrace;
import io.outrun.core.trace.TraceContext;
import io.outrun.core.trace.Tracing;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one claimed execution on this node: starts its sandbox under the claim's lease, waits for
 * its end, decides how the attempt ended ({@link AttemptEnd}, in {@link #runClaimed}) and writes
 * it with one fenced statement ({@link #apply}), then tells the books.
 */
public final class AttemptRunner {

    private static final Logger LOG = LoggerFactory.getLogger(AttemptRunner.class);
    private static final Duration TICK = Duration.ofMillis(200);

    /** How long an execution handed back by a node waits before its next claim. */
    static final Duration RETRY_DELAY = Duration.ofSeconds(5);
    /** As {@link #RETRY_DELAY} while the node's engine is away: 20 hand-backs then span over 5 minutes. */
    static final Duration ENGINE_AWAY_RETRY_DELAY = Duration.ofSeconds(15);

    private final StdinFeeds stdin;
    private final LeaseStore leases;
    private final SubmissionStore submissions;
    private final Books booksWriter;
    private final Sandbox sandbox;
    private final LeaseKeeper keeper;
    private final String node;
    private final Duration ttl;
    private final Function<Execution, RunSpec> specs;
    /** The node's egress proxy (null: none); an egress run's attempt gets a listener of its own. */
    private final io.outrun.worker.proxy.EgressProxy egress;
    private final NodeMetrics metrics;
    private final JobBooks books;
    private final WorkdirBridge workdirs;
    private final Integer defaultMaxRunning;

    /**
     * @param specs             turns a claimed execution into what the sandbox runs (limits, image, env policy)
     * @param defaultMaxRunning the operator's running cap for owners without their own (null: none)
     */
    /** Opens the secrets a run names, with this node's key, just before its start. */
    private final io.outrun.core.secrets.SecretStore secrets;
    /** Signs each attempt's tokens and opens its way to Outrun's API (issue 31). */
    private final io.outrun.worker.bridge.ApiAccess api;

    public AttemptRunner(LeaseStore leases, SubmissionStore submissions, Books booksWriter, Sandbox sandbox,
                         LeaseKeeper keeper, String node, Duration ttl, Function<Execution, RunSpec> specs,
                         NodeMetrics metrics, JobBooks books, WorkdirBridge workdirs, Integer defaultMaxRunning,
                         StdinFeeds stdin, io.outrun.worker.proxy.EgressProxy egress,
                         io.outrun.core.secrets.SecretStore secrets, io.outrun.worker.bridge.ApiAccess api) {
        this.api = api;
        this.egress = egress;
        this.secrets = secrets;
        this.defaultMaxRunning = defaultMaxRunning;
        this.stdin = stdin;
        this.leases = leases;
        this.submissions = submissions;
        this.booksWriter = booksWriter;
        this.sandbox = sandbox;
        this.keeper = keeper;
        this.node = node;
        this.ttl = ttl;
        this.specs = specs;
        this.metrics = metrics;
        this.books = books;
        this.workdirs = workdirs;
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
        books.claimed(execution);
        AttemptTrace trace = AttemptTrace.begin(Tracing.process(), execution.trace(), execution.id(), execution.owner(),
                execution.attempt(), node, execution.enqueuedAt(), claimSentNanos, claimEndNanos);
        // Every log line of this run carries its execution, owner and attempt (SLF4J MDC).
        try (ExecutionMdc tag = ExecutionMdc.put(execution.id(), execution.owner(), execution.attempt())) {
            Attempt attempt = keeper.begin(execution, claimSentNanos);
            attempt.traced(trace);
            LOG.info("execution {} attempt {}/{} (epoch {}) started on {}", execution.id(), execution.attempt(),
                    execution.maxAttempts(), attempt.lease().epoch(), node);
            return runClaimed(execution, attempt, claimed.hasInputs());
        } finally {
            trace.end("left", null, null); // no-op when apply ended it as the attempt ended
        }
    }

    /**
     * Hands back a claim this node won as it stopped, before anything of it started: no attempt
     * spent, claimable again at once by another node; its job is retired, the next one enqueued.
     */
    public void handBackUnstarted(Claimed claimed) {
        Execution e = claimed.execution();
        try {
            Optional<Redriven> back = leases.handBack(Attempt.leaseOf(e), "its node stopped before the run started",
                    Duration.ZERO);
            back.filter(r -> r.status() == ExecutionStatus.QUEUED).ifPresent(r -> {
                booksWriter.enqueue(r.id(), r.bookSeq(), r.owner(), r.command(), r.attempt() + 1);
                booksWriter.wake();
            });
            booksWriter.retire(e.jobId(), "handed back: its node stopped before the run started (no attempt spent)");
            LOG.info("execution {}: handed back unstarted, its node stops", e.id());
        } catch (RuntimeException ex) {
            LOG.warn("execution {}: could not hand it back ({}); its lease expires and the sweep re-drives it", e.id(),
                    ex.toString());
        }
    }

    /** Starts the run, awaits it, decides how it ended and writes that, in that order. */
    private boolean runClaimed(Execution execution, Attempt attempt, boolean hasInputs) {
        Run run;
        WorkdirBridge.Prepared files;
        long memoryBytes;
        io.outrun.worker.proxy.EgressProxy.Listener way = null;
        io.outrun.worker.bridge.ApiAccess.Grant granted = null;
        Span starting = attempt.trace().step("sandbox.start");
        try {
            files = workdirs.prepare(execution, hasInputs);
            RunSpec spec = specs.apply(execution).withLeaseFile(keeper.leaseFile(attempt.lease())).withFiles(files.files());
            spec = withTraceContext(spec, attempt.trace().forCommand());
            if (!files.inputs().secrets().isEmpty()) {
                spec = spec.withSecrets(secrets.open(execution.owner(), files.inputs().secrets()));
            }
            if (egress != null && execution.resources().egress()) {
                way = openEgress(execution, attempt);
                spec = spec.withLimits(spec.limits().withEgressSocket(way.socket()));
            }
            // A short name: a unix socket's path has at most 107 bytes, and the lease dir and node id come first.
            granted = api.grant(execution, execution.id().toString().substring(0, 8) + "-" + attempt.lease().epoch());
            spec = granted.applyTo(spec);
            memoryBytes = spec.limits().memoryBytes();
            run = sandbox.start(spec);
        } catch (RuntimeException e) {
            AttemptTrace.failed(starting, e);
            starting.end();
            if (way != null) {
                way.close();
            }
            if (granted != null) {
                granted.close();
            }
            keeper.end(attempt);
            return apply(execution, attempt, refused(execution, e));
        }
        starting.end();
        io.outrun.worker.proxy.EgressProxy.Listener egressOfRun = way;
        io.outrun.worker.bridge.ApiAccess.Grant apiOfRun = granted;
        if (egressOfRun != null) {
            egressOfRun.noteRefusalsTo(run::noteStderr); // the owner reads why a host was not reached
        }
        StdinFeeds.Feed feed = null;
        try {
            keeper.started(attempt, run);
            // A run with stdin open gets what its owner wrote, from the first byte (a re-run attempt too).
            feed = execution.stdin().mode().open() ? stdin.start(execution.id(), run) : null;
            return apply(execution, attempt, await(execution, attempt, run, files, memoryBytes));
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
                        if (egressOfRun != null) {
                            egressOfRun.close(); // every connection of the run ends with it
                        }
                    } finally {
                        try {
                            apiOfRun.close(); // and its way to the API (its token is refused by the API from now on)
                        } finally {
                            keeper.end(attempt);
                        }
                    }
                }
            }
        }
    }

    private io.outrun.worker.proxy.EgressProxy.Listener openEgress(Execution execution, Attempt attempt) {
        try {
            return egress.open(execution.id() + "-" + attempt.lease().epoch());
        } catch (java.io.IOException e) {
            throw new io.outrun.sandbox.SandboxException("cannot open the egress proxy for this run: " + e.getMessage(), e);
        }
    }

    /**
     * The command joins the execution's trace through {@code TRACEPARENT} / {@code TRACESTATE}
     * (the W3C names OpenTelemetry's SDKs read for a process's parent) unless its owner set them.
     */
    private static RunSpec withTraceContext(RunSpec spec, TraceContext trace) {
        // The owner's own (its operator allowed them): both kept, never one of each trace.
        if (trace == null || spec.env().containsKey("TRACEPARENT") || spec.env().containsKey("TRACESTATE")) {
            return spec;
        }
        java.util.Map<String, String> env = new java.util.LinkedHashMap<>(spec.env());
        env.put("TRACEPARENT", trace.traceparent());
        if (trace.tracestate() != null) {
            env.putIfAbsent("TRACESTATE", trace.tracestate());
        }
        return spec.withEnv(env);
    }

    /** The end of a run that never started. */
    private AttemptEnd refused(Execution execution, RuntimeException e) {
        if (e instanceof ImageNotFoundException missing) {
            if (execution.image() == null) {
                // The node's own default image vanished: another node may still have it.
                LOG.error("execution {}: this node's default image {} is gone; handing it back", execution.id(), missing.image());
                metrics.handedBack();
                return new HandedBack("the default image " + missing.image() + " is missing on node " + node, RETRY_DELAY);
            }
            // The request named an image no worker offers: the caller's to fix, not to retry.
            return failed("image_not_found", "The image '" + missing.image() + "' does not exist on the worker's Docker"
                    + " engine. Submit without `image` to use the default sandbox image, or ask the operator which"
                    + " images are available.");
        }
        if (e instanceof ImageNotAllowedException refused) {
            return failed("image_not_allowed", "The image '" + refused.image() + "' is not allowed on the workers ("
                    + refused.getMessage() + "). Submit without `image` to use the default sandbox image.");
        }
        if (e instanceof io.outrun.core.secrets.SecretUnavailableException) {
            // Gone, or this node cannot open it: the message names the secret and what to do, never its value.
            return failed("secret_unavailable", "The execution's secrets could not be given to it: " + e.getMessage());
        }
        if (e instanceof io.outrun.core.identity.IdentityUnavailableException) {
            // Never run without the identity it asked for: what it would call would refuse it anyway.
            return failed("identity_unavailable", "The execution asked for an identity, but its node cannot sign one: "
                    + e.getMessage() + ". Ask the operator, or submit without `identity`.");
        }
        if (e instanceof RunRefusedException || e instanceof IllegalArgumentException) {
            // The sandbox refuses the run as specified, or the stored execution cannot become a
            // valid run (a limit out of range): retrying won't help.
            return failed("sandbox_error", "The sandbox refused the execution: " + e.getMessage());
        }
        if (e instanceof SandboxException) {
            // The command never ran: handed back without spending an attempt. If the engine did
            // start a container after all, its epoch is never live again: the clean-up removes it.
            metrics.handedBack();
            if (sandbox.engineUp()) {
                LOG.error("execution {}: the sandbox could not start it; handing it back", execution.id(), e);
                return new HandedBack(e.getMessage(), RETRY_DELAY);
            }
            // The engine is away (restarting, upgrading): expected, and hand-backs are counted,
            // so space them out to outlast an engine restart rather than spend them in a minute.
            LOG.warn("execution {}: the sandbox's engine is away ({}); handing it back", execution.id(), e.getMessage());
            return new HandedBack(e.getMessage(), ENGINE_AWAY_RETRY_DELAY);
        }
        // A bug or an unexpected failure before the run existed: nothing is written, its lease
        // expires and the sweep re-drives the execution.
        LOG.error("execution {}: its run could not be started", execution.id(), e);
        return new LeaseLost("its run could not be started: " + e);
    }

    private static Finished failed(String code, String message) {
        return new Finished(Outcome.withoutOutput(ExecutionStatus.FAILED, null, code, message));
    }

    /** Waits for the run and decides how the attempt ended. */
    private AttemptEnd await(Execution execution, Attempt attempt, Run run, WorkdirBridge.Prepared files, long memoryBytes) {
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
            if (exit == null && attempt.drained() && !attempt.leaseLost()) {
                // The node's drain time is up: the watchdog kills the run; hand it back once it is dead.
                if (!awaitDeath(run)) {
                    // Never hand back a run that may live: its lease lapses and the sweep decides.
                    return new LeaseLost("the drained run is not confirmed dead; its lease will expire");
                }
                return new Drained();
            }
            if (exit == null) {
                // Lease lost: the watchdog kills the run; close() removes it. Nothing more is written.
                return new LeaseLost("lease lost");
            }
            if (!exit.lost()) {
                // Still under the lease (renewed while RUNNING): artifacts, full output and the
                // workspace are kept before the end is written, so whoever sees the end sees them.
                workdirs.collect(attempt.lease(), execution, files.inputs(), run, attempt.trace());
            }
            attempt.ending();
            if (exit.lost()) {
                // The engine or an operator ended the container, not the command: exit code
                // meaningless, attempt lost, re-driven like a dead worker's.
                metrics.sandboxLost();
                return new Abandoned(capitalized(exit.lostTo()), lostPause());
            }
            return new Finished(outcome(execution, attempt, exit, memoryBytes));
        } catch (SandboxException e) {
            // The sandbox lost sight of the run (e.g. the Docker engine restarted): not the
            // command's fault. The run may still live: its next attempt waits at least a ttl, by
            // when the run's kill switch has ended it (its lease is released, so never renewed).
            LOG.error("{}: the sandbox lost the run; the attempt is lost", attempt, e);
            run.kill();
            metrics.sandboxLost();
            return new Abandoned("The sandbox lost the run: " + e.getMessage(), lostPause());
        } catch (InterruptedException e) {
            // The node stops: the lease decides what happens next, so nothing is written here
            // (close() kills and removes the run).
            Thread.currentThread().interrupt();
            return new LeaseLost("interrupted on " + node + " (the node stops); its lease will expire");
        }
    }

    /**
     * A started attempt the sandbox lost is claimable again only after a lease ttl: a container
     * the engine could not confirm stopped has killed itself by then (its kill switch), so it never
     * runs beside its next attempt.
     */
    private Duration lostPause() {
        return ttl.compareTo(RETRY_DELAY) > 0 ? ttl : RETRY_DELAY;
    }

    /**
     * The one writer of an attempt's end: the execution's row, then its JobRunr job's books.
     *
     * @return true when the owner has queued work the freed slot may take (see {@link #run})
     */
    private boolean apply(Execution execution, Attempt attempt, AttemptEnd end) {
        Span writing = attempt.trace().step("execution.end");
        boolean written = false;
        try {
            boolean look = write(execution, attempt, end);
            written = true;
            return look;
        } catch (RuntimeException | Error e) {
            AttemptTrace.failed(writing, e);
            throw e;
        } finally {
            writing.end();
            if (!written) {
                attempt.trace().end("end_not_written", null, null); // its lease expires; the sweep decides
            } else if (end instanceof Finished f) {
                attempt.trace().end(f.outcome().status().wire(), f.outcome().exitCode(), f.outcome().errorCode());
            } else {
                // HandedBack → handed_back: how the attempt left without an end of the execution
                attempt.trace().end(end.getClass().getSimpleName().replaceAll("(?<=[a-z])(?=[A-Z])", "_")
                        .toLowerCase(java.util.Locale.ROOT), null, null);
            }
        }
    }

    /** {@link #apply}'s write. */
    private boolean write(Execution execution, Attempt attempt, AttemptEnd end) {
        Lease lease = attempt.lease();
        UUID job = execution.jobId();
        LeaseStore.Retried retried = end instanceof Finished f && execution.retry() != null
                && execution.retry().applies(f.outcome().errorCode()) ? retry(execution, attempt, f.outcome()) : null;
        if (retried != null && !retried.cancelRequested()) {
            return false; // re-queued for its retry (or its lease was lost meanwhile)
        }
        // Not retried, or its owner cancelled as it failed: the attempt's end is written as it ended.
        if (end instanceof Finished f) {
            LeaseStore.Finish done = finish(attempt, f.outcome());
            if (done.written()) {
                books.ended(job, mirror(ended(execution, f.outcome()), execution.attempt(), f.outcome().errorMessage()));
            } else {
                books.forget(job);
            }
            return done.ownerQueued();
        } else if (end instanceof HandedBack h) {
            redriven(execution, leases.handBack(lease, h.why(), h.pause()), "was handed back (no attempt spent: its"
                    + " sandbox could not start it)", false, h.pause());
        } else if (end instanceof Abandoned a) {
            LOG.warn("{}: {}; the attempt is lost (re-driven while attempts remain)", attempt, a.why());
            redriven(execution, leases.abandon(lease, "sandbox_lost", a.why() + ". The attempt was lost, not the"
                    + " command's failure, and no attempts remain; resubmit it (and have the operator check the node's"
                    + " Docker engine).", a.pause()), "was lost on node " + node + " (its sandbox lost the run)", true, a.pause());
        } else if (end instanceof Drained) {
            LOG.info("{} handed back by its draining node; no attempt spent", attempt);
            redriven(execution, leases.drainBack(lease), "was handed back by its draining node " + node
                    + " (no attempt spent)", false, Duration.ZERO);
        } else if (end instanceof LeaseLost l) {
            LOG.warn("{}: {}; its run is killed and nothing of it is written", attempt, l.why());
            books.forget(job);
        }
        return false;
    }

    /**
     * After a departure other than the end: a re-queued execution gets its next JobRunr job (and a
     * node is woken when it may start at once: after a pause the fallback poll finds it); this
     * attempt's job ends as the execution went on.
     */
    private void redriven(Execution execution, Optional<Redriven> moved, String what, boolean spent, Duration pause) {
        UUID job = execution.jobId();
        if (moved.isEmpty()) {
            books.forget(job); // lease already lost: the sweep decided
            return;
        }
        Redriven r = moved.get();
        String attempt = "attempt " + execution.attempt() + " " + what;
        if (r.status() == ExecutionStatus.QUEUED) {
            // SCHEDULED on the dashboard while it waits out a pause (a backoff, a hand-back's wait).
            booksWriter.enqueue(r.id(), r.bookSeq(), r.owner(), r.command(), r.attempt() + 1,
                    pause.isZero() ? null : java.time.Instant.now().plus(pause));
            if (pause.isZero()) {
                booksWriter.wake();
            }
            UUID next = JobIds.of(r.id(), r.bookSeq());
            String why = attempt + "; the execution continues" + (spent ? " as attempt " + (r.attempt() + 1) : "")
                    + " as JobRunr job " + next;
            books.ended(job, spent ? BookEntry.failed(why, () -> List.of(why)) : BookEntry.deleted(why, () -> List.of(why)));
        } else {
            Optional<Execution> now = submissions.find(r.id(), OutputStore.Read.NONE);
            books.ended(job, now.map(e -> mirror(e, execution.attempt(), attempt))
                    .orElse(BookEntry.deleted(attempt, () -> List.of(attempt))));
        }
        booksWriter.wake(Channels.CHANGED, r.id().toString()); // long polls re-read at least every second anyway
    }

    /** The end of the job of attempt {@code attempt} of {@code e}, as {@code e} ended. */
    private BookEntry mirror(Execution e, int attempt, String context) {
        String message = (e.errorCode() == null ? "" : e.errorCode() + ": ")
                + (e.errorMessage() == null ? e.status().wire() : e.errorMessage());
        java.util.function.Supplier<List<String>> summary = () -> Summary.of(e, attempt, node,
                e.status() == ExecutionStatus.SUCCEEDED ? "" : message, submissions);
        return switch (e.status()) {
            case SUCCEEDED -> BookEntry.succeeded(summary);
            case CANCELLED -> BookEntry.deleted(message, summary);
            default -> BookEntry.failed(message, summary);
        };
    }

    /** The row as the fence accepted its end, without reading it back (which would cost a read per execution). */
    private static Execution ended(Execution c, Outcome o) {
        Instant finished = c.startedAt() == null ? null : Instant.now();
        return new Execution(c.id(), c.owner(), c.command(), c.image(), c.workdir(), c.env(), c.labels(),
                c.timeoutMs(), c.maxOutputBytes(), o.status(), c.attempt(), c.maxAttempts(), null,
                c.leaseEpoch(), c.outputEpoch(), null, c.cancelRequested(), c.idempotencyKey(), c.bookSeq(),
                c.jobId(), c.enqueuedAt(), c.createdAt(), c.startedAt(), finished, o.exitCode(), o.errorCode(),
                o.errorMessage(), new Captured(new byte[0], new byte[0], o.stdoutTotal()),
                new Captured(new byte[0], new byte[0], o.stderrTotal()), c.stdin(), c.resources(), c.startsAt(), c.retry(),
                c.webhook(), c.trace(), c.lineage(), c.identityAudience(), c.progress());
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

    /**
     * Writes the end, retrying through a database outage for as long as it lasts: the command's
     * result is worth keeping, and the fence answers for us once the database is back (it rejects
     * the write if the execution was re-driven meanwhile). A failure that is not an outage is not
     * retried: the run is untracked, its lease expires and the sweep re-drives the execution. An
     * interrupt (the node stops) does not stop the retries while the lease lasts; it is passed on.
     *
     * @return whether the end was written (the fence accepted it), and whether the owner has queued work
     */
    /**
     * The owner asked for this failure to be retried: re-queued after its backoff, a new attempt,
     * and its next JobRunr job SCHEDULED for then. A database failure leaves the lease to expire
     * and the sweep to decide, as for an end.
     */
    private LeaseStore.Retried retry(Execution execution, Attempt attempt, Outcome outcome) {
        io.outrun.core.execution.Retry retry = execution.retry();
        Duration pause = retry.nextBackoff();
        String failure = "attempt " + execution.attempt() + " ended " + outcome.errorCode()
                + (outcome.exitCode() != null ? " (exit code " + outcome.exitCode() + ")" : "");
        LeaseStore.Retried retried;
        try {
            retried = leases.retry(attempt.lease(), outcome, failure, pause);
        } catch (StoreException e) {
            LOG.error("{}: its retry cannot be written; its lease will expire and the sweep re-drives it", attempt, e);
            retried = new LeaseStore.Retried(Optional.empty(), false);
        }
        if (retried.cancelRequested()) {
            return retried;
        }
        LOG.info("{}: {}; retry {} of {} in {} ms", attempt, failure, retry.retries() + 1, retry.maxRetries(),
                pause.toMillis());
        redriven(execution, retried.moved(), failure + "; retried (retry " + (retry.retries() + 1) + " of "
                + retry.maxRetries() + ", after " + pause.toMillis() + " ms)", true, pause);
        if (!pause.isZero()) {
            booksWriter.wake(); // the node woken learns when it is due and looks then (LeaseStore.Batch#nextDueMs)
        }
        return retried;
    }

    private LeaseStore.Finish finish(Attempt attempt, Outcome outcome) {
        Lease lease = attempt.lease();
        long pauseMs = 250;
        LeaseStore.Finish written;
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    written = leases.finish(lease, outcome, defaultMaxRunning);
                    break;
                } catch (StoreException e) {
                    if (!Outage.is(e)) {
                        LOG.error("{}: its end cannot be written; its lease will expire and the sweep re-drives it",
                                attempt, e);
                        return NOT_WRITTEN;
                    }
                    if (attempt.leaseLost() || attempt.pastDeadline()) {
                        // The end write is bounded by the lease: past it the sweep re-drives or
                        // reaps the execution (its fence would refuse this end anyway).
                        LOG.warn("{}: writing its end failed through an outage longer than its lease; the sweep decides",
                                attempt);
                        return NOT_WRITTEN;
                    }
                    LOG.warn("{}: writing its end failed ({}); retrying in {} ms", attempt, e.getMessage(), pauseMs);
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
        if (written.written()) {
            metrics.ended(outcome.status());
            LOG.info("execution {} attempt {} ended {} (exit {})", lease.executionId(), lease.attempt(),
                    outcome.status().wire(), outcome.exitCode());
        } else {
            LOG.warn("{}: lease lost before the end was written; the write was fenced out", attempt);
        }
        return written;
    }

    private static final LeaseStore.Finish NOT_WRITTEN = new LeaseStore.Finish(false, false);

    private static String capitalized(String sentence) {
        return sentence.isEmpty() ? sentence : Character.toUpperCase(sentence.charAt(0)) + sentence.substring(1);
    }
}
