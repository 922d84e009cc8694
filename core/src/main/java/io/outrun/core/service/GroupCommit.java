package io.outrun.core.service;

import io.outrun.core.execution.Submission;
import io.outrun.core.store.Outage;
import io.outrun.core.store.StoreException;
import io.outrun.core.store.SubmissionStore;
import io.outrun.core.store.SubmissionStore.Inserted;
import io.outrun.core.trace.TraceContext;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Group commit of single submits: concurrent submits on one API node share one transaction, so
 * that a burst pays one round trip and one WAL flush instead of one each. Leader and followers,
 * no timer: a submit that finds no flush in progress is the leader and stores at once what is
 * waiting (itself, at low load nobody else), so a lone submit waits for nothing; submits that
 * arrive while a flush is in flight queue, and the first of them leads the next flush, with all
 * that queued meanwhile (at most {@link #MAX_GROUP} rows and about {@link #MAX_GROUP_BYTES}).
 * Each caller returns only once its row is committed (or with its own failure): a 202 is still
 * durable. One flush at a time per node: while it runs, the next group grows.
 *
 * <p>One submission must not fail the others: when the shared transaction fails for a reason
 * that may be one row's ({@link #storeEach}), each is stored again alone.
 */
final class GroupCommit {

    /** Rows in one transaction at most: beyond this, a flush takes long enough to hold the next back. */
    static final int MAX_GROUP = 128;
    /** About this many bytes of commands and input files in one transaction at most (one row may pass it alone). */
    static final long MAX_GROUP_BYTES = 16L << 20;

    private final SubmissionStore store;
    private final Object lock = new Object();
    /** Submits not yet taken by a flush, oldest first. Empty whenever {@link #flushing} is false. */
    private final ArrayDeque<Pending> waiting = new ArrayDeque<>();
    private boolean flushing;
    private final AtomicLong transactions = new AtomicLong();

    GroupCommit(SubmissionStore store) {
        this.store = store;
    }

    /** Stores {@code s} with whatever other submits are waiting; returns once its row is committed. */
    Inserted insert(Submission s, TraceContext trace) {
        Pending me = new Pending(s, trace);
        boolean lead;
        synchronized (lock) {
            waiting.add(me);
            lead = !flushing;
            flushing = true;
        }
        if (!lead) {
            lead = me.awaitTurn();
        }
        if (lead) {
            lead();
        }
        return me.outcome().orThrow();
    }

    /** Submits queued for the next flush now (a test's view). */
    int waiting() {
        synchronized (lock) {
            return waiting.size();
        }
    }

    /** Flushes written since this node started (each one transaction, or one per row after a failure). */
    long transactions() {
        return transactions.get();
    }

    /** Takes what waits (this leader first), stores it, answers each, and hands the lead on. */
    private void lead() {
        List<Pending> group = new ArrayList<>();
        synchronized (lock) {
            long bytes = 0;
            while (!waiting.isEmpty() && group.size() < MAX_GROUP
                    && (group.isEmpty() || bytes + waiting.peek().bytes <= MAX_GROUP_BYTES)) {
                Pending p = waiting.poll();
                bytes += p.bytes;
                group.add(p);
            }
        }
        Throwable thrown = null;
        try {
            List<Submission> submissions = new ArrayList<>(group.size());
            List<TraceContext> traces = new ArrayList<>(group.size());
            for (Pending p : group) {
                submissions.add(p.submission);
                traces.add(p.trace);
            }
            List<Stored> stored = storeEach(store, submissions, traces);
            transactions.incrementAndGet();
            for (int i = 0; i < group.size(); i++) {
                group.get(i).done(stored.get(i));
            }
        } catch (RuntimeException | Error e) {
            thrown = e;
            RuntimeException failure = e instanceof RuntimeException r ? r
                    : new StoreException("cannot store " + group.size() + " new executions", e);
            for (Pending p : group) {
                p.done(Stored.failed(failure)); // a no-op for those already answered
            }
        } finally {
            synchronized (lock) {
                Pending next = waiting.peek();
                if (next == null) {
                    flushing = false;
                } else {
                    next.promote();
                }
            }
        }
        if (thrown instanceof Error error) {
            throw error;
        }
    }

    /**
     * Stores {@code submissions} in one transaction; if that fails for a reason that may be one
     * row's (a value the database refuses, a constraint), stores each alone, so that only the
     * bad ones fail. A database that is away, full or read-only fails them all at once, as it
     * fails a single submit.
     */
    static List<Stored> storeEach(SubmissionStore store, List<Submission> submissions, List<TraceContext> traces) {
        try {
            return store.insertAll(submissions, traces).stream().map(Stored::ok).toList();
        } catch (RuntimeException e) {
            if (submissions.size() == 1 || !mayBeOneRows(e)) {
                return submissions.stream().map(s -> Stored.failed(e)).toList();
            }
        }
        List<Stored> out = new ArrayList<>(submissions.size());
        for (int i = 0; i < submissions.size(); i++) {
            try {
                out.add(Stored.ok(store.insert(submissions.get(i), traces.get(i))));
            } catch (RuntimeException e) {
                out.add(Stored.failed(e));
                if (!mayBeOneRows(e)) {
                    while (out.size() < submissions.size()) {
                        out.add(Stored.failed(e)); // the database went away: the rest would fail alike
                    }
                }
            }
        }
        return out;
    }

    /** Whether {@code failure} may come from one row of several rather than from the database itself. */
    static boolean mayBeOneRows(Throwable failure) {
        return !Outage.is(failure) && !Outage.diskFull(failure) && !Outage.readOnly(failure);
    }

    /** One submit waiting for its flush. */
    private static final class Pending {
        final Submission submission;
        final TraceContext trace;
        final long bytes;
        private Stored outcome;
        private boolean lead;

        Pending(Submission submission, TraceContext trace) {
            this.submission = submission;
            this.trace = trace;
            byte[] files = submission.inputs().filesTar();
            this.bytes = submission.command().length() + (files == null ? 0 : files.length);
        }

        synchronized void done(Stored stored) {
            if (outcome == null) {
                outcome = stored;
                notifyAll();
            }
        }

        synchronized void promote() {
            lead = true;
            notifyAll();
        }

        /**
         * Waits until a flush answered this submit (false) or it leads the next flush (true).
         * Not interruptible: its row may be in a flush already, and its caller must learn how
         * that ended; the interrupt is kept for the caller.
         */
        synchronized boolean awaitTurn() {
            boolean interrupted = false;
            while (outcome == null && !lead) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            return outcome == null;
        }

        synchronized Stored outcome() {
            return outcome;
        }
    }
}
