package io.outrun.worker.attempt;

import io.outrun.core.books.BookEntry;
import io.outrun.core.books.Books;
import io.outrun.core.books.JobBooks;
import io.outrun.core.notify.Wakes;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.JobIds;
import io.outrun.core.store.Channels;
import io.outrun.core.store.Lease;
import io.outrun.core.store.Outage;
import io.outrun.core.store.Outcome;
import io.outrun.core.store.OutputStore;
import io.outrun.core.store.Departed;
import io.outrun.core.store.StoreException;
import io.outrun.core.store.SubmissionStore;
import io.outrun.core.trace.AttemptTrace;
import io.outrun.model.output.Captured;
import io.outrun.worker.attempt.AttemptEnd.Abandoned;
import io.outrun.worker.attempt.AttemptEnd.Drained;
import io.outrun.worker.attempt.AttemptEnd.Finished;
import io.outrun.worker.attempt.AttemptEnd.HandedBack;
import io.outrun.worker.attempt.AttemptEnd.LeaseLost;
import io.outrun.worker.attempt.AttemptEnd.Retried;
import io.outrun.worker.attempt.AttemptEnd.Unstarted;
import io.outrun.worker.lease.Attempt;
import io.outrun.worker.lease.LeaseStore;
import io.outrun.worker.metrics.NodeMetrics;
import io.opentelemetry.api.trace.Span;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one writer of an attempt's end, whichever it is ({@link AttemptEnd}, through its visitor):
 * the execution's row with one fenced statement (or transaction) of {@link LeaseStore}, then its
 * JobRunr job ({@link #book}). Every write is fenced on the attempt's lease; a fenced-out write
 * means the lease is lost and nothing more is written.
 */
public final class EndWriter {

    // The runner's logger: an attempt's lines, from its start to its end, under one logger name.
    private static final Logger LOG = LoggerFactory.getLogger(AttemptRunner.class);
    private static final LeaseStore.Finish NOT_WRITTEN = new LeaseStore.Finish(false, false);

    /** Where an end is written: the execution's row (fenced by its lease), and its JobRunr job. */
    public record Stores(LeaseStore leases, SubmissionStore submissions, Books booksWriter, JobBooks books, Wakes wakes) {
    }

    private final LeaseStore leases;
    private final SubmissionStore submissions;
    private final Books booksWriter;
    private final JobBooks books;
    private final Wakes wakes;
    private final NodeMetrics metrics;
    private final String node;
    private final Integer defaultMaxRunning;

    /** @param defaultMaxRunning the operator's running cap for owners without their own (null: none) */
    public EndWriter(Stores stores, NodeMetrics metrics, String node, Integer defaultMaxRunning) {
        this.leases = stores.leases();
        this.submissions = stores.submissions();
        this.booksWriter = stores.booksWriter();
        this.books = stores.books();
        this.wakes = stores.wakes();
        this.metrics = metrics;
        this.node = node;
        this.defaultMaxRunning = defaultMaxRunning;
    }

    /** The books' side of a claim: its JobRunr job shown PROCESSING on this node. */
    void claimed(Execution execution) {
        books.claimed(execution);
    }

    /**
     * Writes the end of a claimed attempt, within its trace's {@code execution.end} step.
     *
     * @return true when the owner has queued work the freed slot may take (see {@link AttemptRunner#run})
     */
    boolean apply(Execution execution, Attempt attempt, AttemptEnd end) {
        Span writing = attempt.trace().step("execution.end");
        boolean written = false;
        try {
            boolean look = end.accept(new Write(execution, attempt));
            written = true;
            return look;
        } catch (RuntimeException | Error e) {
            AttemptTrace.failed(writing, e);
            throw e;
        } finally {
            writing.end();
            if (!written) {
                attempt.trace().end("end_not_written", null, null); // its lease expires; the sweep decides
            } else {
                end.accept(new TraceEnd(attempt.trace()));
            }
        }
    }

    /**
     * Hands back a claim this node won as it stopped, before anything of it started: no attempt
     * spent, claimable again at once by another node; its job is retired, the next one enqueued.
     */
    public void handBackUnstarted(Execution claimed) {
        new Unstarted("its node stopped before the run started").accept(new Write(claimed, null));
    }

    /** The writes of each end; {@code attempt} is null only for {@link Unstarted} (it never began). */
    private final class Write implements AttemptEnd.Visitor<Boolean> {
        private final Execution execution;
        private final Attempt attempt;
        private final UUID job;

        Write(Execution execution, Attempt attempt) {
            this.execution = execution;
            this.attempt = attempt;
            this.job = execution.jobId();
        }

        @Override
        public Boolean finished(Finished end) {
            LeaseStore.Finish done = finish(attempt, end.outcome());
            book(job, done.written() ? () -> BookEntry.mirror(ended(execution, end.outcome()), execution.attempt(), node, submissions)
                    : null, null, Duration.ZERO);
            return done.ownerQueued();
        }

        /**
         * Re-queued after its backoff, a new attempt, its next JobRunr job SCHEDULED for then. A
         * database failure leaves the lease to expire and the sweep to decide, as for an end; an
         * owner's cancel that landed as it failed writes the attempt's end as it ended.
         */
        @Override
        public Boolean retried(Retried end) {
            Outcome outcome = end.outcome();
            String failure = "attempt " + execution.attempt() + " ended " + outcome.errorCode()
                    + (outcome.exitCode() != null ? " (exit code " + outcome.exitCode() + ")" : "");
            LeaseStore.Retried retried;
            try {
                retried = leases.retry(attempt.lease(), outcome, failure, end.pause());
            } catch (StoreException e) {
                LOG.error("{}: its retry cannot be written; its lease will expire and the sweep re-drives it", attempt, e);
                retried = new LeaseStore.Retried(Optional.empty(), false);
            }
            if (retried.cancelRequested()) {
                return finished(new Finished(outcome));
            }
            LOG.info("{}: {}; retry {} of {} in {} ms", attempt, failure, end.retry(), end.maxRetries(), end.pause().toMillis());
            redriven(retried.moved(), failure + "; retried (retry " + end.retry() + " of " + end.maxRetries() + ", after "
                    + end.pause().toMillis() + " ms)", true, end.pause());
            if (!end.pause().isZero()) {
                wakes.wake(); // the node woken learns when it is due and looks then (LeaseStore.Batch#nextDueMs)
            }
            return false; // re-queued for its retry (or its lease was lost meanwhile)
        }

        @Override
        public Boolean handedBack(HandedBack end) {
            metrics.handedBack();
            redriven(leases.handBack(attempt.lease(), end.why(), end.pause()), "was handed back (no attempt spent: its"
                    + " sandbox could not start it)", false, end.pause());
            return false;
        }

        @Override
        public Boolean unstarted(Unstarted end) {
            try {
                Optional<Departed> back = leases.handBack(Attempt.leaseOf(execution), end.why(), Duration.ZERO);
                retire(job, back.filter(r -> r.status() == ExecutionStatus.QUEUED).orElse(null),
                        "handed back: " + end.why() + " (no attempt spent)");
                LOG.info("execution {}: handed back unstarted, its node stops", execution.id());
            } catch (RuntimeException ex) {
                LOG.warn("execution {}: could not hand it back ({}); its lease expires and the sweep re-drives it",
                        execution.id(), ex.toString());
            }
            return false;
        }

        @Override
        public Boolean abandoned(Abandoned end) {
            metrics.sandboxLost();
            LOG.warn("{}: {}; the attempt is lost (re-driven while attempts remain)", attempt, end.why());
            redriven(leases.abandon(attempt.lease(), "sandbox_lost", end.why() + ". The attempt was lost, not the"
                    + " command's failure, and no attempts remain; resubmit it (and have the operator check the node's"
                    + " Docker engine).", end.pause()), "was lost on node " + node + " (its sandbox lost the run)", true,
                    end.pause());
            return false;
        }

        @Override
        public Boolean drained(Drained end) {
            LOG.info("{} handed back by its draining node; no attempt spent", attempt);
            redriven(leases.drainBack(attempt.lease()), "was handed back by its draining node " + node
                    + " (no attempt spent)", false, Duration.ZERO);
            return false;
        }

        @Override
        public Boolean leaseLost(LeaseLost end) {
            LOG.warn("{}: {}; its run is killed and nothing of it is written", attempt, end.why());
            book(job, null, null, Duration.ZERO);
            return false;
        }

        /**
         * After a departure other than the end: a re-queued execution gets its next JobRunr job (and
         * a node is woken when it may start at once: after a pause the fallback poll finds it); this
         * attempt's job ends as the execution went on.
         */
        private void redriven(Optional<Departed> moved, String what, boolean spent, Duration pause) {
            if (moved.isEmpty()) {
                book(job, null, null, pause); // lease already lost: the sweep decided
                return;
            }
            Departed r = moved.get();
            String told = "attempt " + execution.attempt() + " " + what;
            if (r.status() == ExecutionStatus.QUEUED) {
                String why = told + "; the execution continues" + (spent ? " as attempt " + (r.attempt() + 1) : "")
                        + " as JobRunr job " + JobIds.of(r.id(), r.bookSeq());
                book(job, () -> spent ? BookEntry.failed(why, () -> List.of(why)) : BookEntry.deleted(why, () -> List.of(why)),
                        r, pause);
            } else {
                Optional<Execution> now = submissions.find(r.id(), OutputStore.Read.NONE);
                BookEntry entry = now.map(e -> BookEntry.mirror(e, execution.attempt(), node, submissions))
                        .orElse(BookEntry.deleted(told, () -> List.of(told)));
                book(job, () -> entry, null, pause);
            }
            wakes.wake(Channels.CHANGED, r.id().toString()); // long polls re-read at least every second anyway
        }
    }

    /**
     * Everything an end tells JobRunr, in one place (the books' API is being reshaped apart): a
     * re-queued execution's next job ({@code next}; SCHEDULED on the dashboard while it waits out
     * {@code pause}, and a node woken when it may start at once), then this attempt's job, ended
     * as {@code entry} says or forgotten ({@code entry} null: the sweep decides).
     */
    private void book(UUID job, Supplier<BookEntry> entry, Departed next, Duration pause) {
        if (next != null) {
            booksWriter.enqueue(next.id(), next.bookSeq(), next.owner(), next.command(), next.attempt() + 1,
                    pause.isZero() ? null : Instant.now().plus(pause));
            if (pause.isZero()) {
                wakes.wake();
            }
        }
        if (entry == null) {
            books.forget(job);
        } else {
            books.ended(job, entry.get());
        }
    }

    /** As {@link #book}, for a claim whose job the books never saw claimed: retired, not ended. */
    private void retire(UUID job, Departed next, String why) {
        if (next != null) {
            booksWriter.enqueue(next.id(), next.bookSeq(), next.owner(), next.command(), next.attempt() + 1);
            wakes.wake();
        }
        booksWriter.retire(job, why);
    }

    /** The row as the fence accepted its end, without reading it back (which would cost a read per execution). */
    private static Execution ended(Execution c, Outcome o) {
        Instant finished = c.startedAt() == null ? null : Instant.now();
        return c.toBuilder().status(o.status()).leaseHolder(null).leaseExpiresAt(null).finishedAt(finished)
                .exitCode(o.exitCode()).errorCode(o.errorCode()).errorMessage(o.errorMessage())
                .stdout(new Captured(new byte[0], new byte[0], o.stdoutTotal()))
                .stderr(new Captured(new byte[0], new byte[0], o.stderrTotal())).build();
    }

    /**
     * Writes the end, retrying through a database outage or a full disk while its lease lasts:
     * the command's result is worth keeping, and the fence answers for us once the database is back (it rejects
     * the write if the execution was re-driven meanwhile). A failure that is not an outage is not
     * retried: the run is untracked, its lease expires and the sweep re-drives the execution. An
     * interrupt (the node stops) does not stop the retries while the lease lasts; it is passed on.
     *
     * @return whether the end was written (the fence accepted it), and whether the owner has queued work
     */
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
                    // A full disk is retried as an outage is: an operator frees space, and the
                    // command's result should not cost an attempt meanwhile (DiskFullIT).
                    if (!Outage.is(e) && !Outage.diskFull(e)) {
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

    /** How the attempt's trace ends once its end is written: its execution's end, or how it left without one. */
    private static final class TraceEnd implements AttemptEnd.Visitor<Void> {
        private final AttemptTrace trace;

        TraceEnd(AttemptTrace trace) {
            this.trace = trace;
        }

        private Void ended(Outcome o) {
            trace.end(o.status().wire(), o.exitCode(), o.errorCode());
            return null;
        }

        private Void left(String how) {
            trace.end(how, null, null);
            return null;
        }

        @Override
        public Void finished(Finished end) {
            return ended(end.outcome());
        }

        @Override
        public Void retried(Retried end) {
            return ended(end.outcome()); // as the attempt ended, re-queued or not
        }

        @Override
        public Void handedBack(HandedBack end) {
            return left("handed_back");
        }

        @Override
        public Void unstarted(Unstarted end) {
            return left("unstarted"); // never traced: its run never began
        }

        @Override
        public Void abandoned(Abandoned end) {
            return left("abandoned");
        }

        @Override
        public Void drained(Drained end) {
            return left("drained");
        }

        @Override
        public Void leaseLost(LeaseLost end) {
            return left("lease_lost");
        }
    }
}
