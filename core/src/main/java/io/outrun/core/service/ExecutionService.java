package io.outrun.core.service;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.outrun.core.books.Books;
import io.outrun.core.books.NewBooks;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.family.Children;
import io.outrun.core.notify.Wakes;
import io.outrun.core.owner.QueueGate;
import io.outrun.core.owner.TooManyQueuedException;
import io.outrun.core.redrive.RedriveSweep;
import io.outrun.core.store.Channels;
import io.outrun.core.store.DiskFull;
import io.outrun.core.store.OutputStore;
import io.outrun.core.store.StdinStore;
import io.outrun.core.store.SubmissionStore.CancelResult;
import io.outrun.core.store.SubmissionStore.Inserted;
import io.outrun.core.store.SubmissionStore;
import io.outrun.core.trace.AttemptTrace;
import io.outrun.core.trace.TraceContext;
import io.outrun.core.trace.Tracing;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * What owners can do with executions, whatever the transport (HTTP, CLI, tests). Every call is
 * scoped to an owner: another owner's execution behaves exactly like one that does not exist.
 */
public final class ExecutionService {

    private final SubmissionStore store;
    private final StdinStore stdin;
    private final Books books;
    private final NewBooks newBooks;
    private final Wakes wakes;
    private final RedriveSweep sweep;
    private final QueueGate queueGate;
    private final DiskFull diskFull = new DiskFull();
    private final GroupCommit group;
    private final Children children;

    public ExecutionService(SubmissionStore store, StdinStore stdin, Books books, NewBooks newBooks, Wakes wakes,
                            RedriveSweep sweep, QueueGate queueGate, Children children) {
        this.newBooks = newBooks;
        this.children = children;
        this.stdin = stdin;
        this.queueGate = queueGate;
        this.store = store;
        this.group = new GroupCommit(store);
        this.books = books;
        this.wakes = wakes;
        this.sweep = sweep;
    }

    /** The execution {@code owner} submitted under {@code idempotencyKey}, if any (no output read). */
    public Optional<Execution> findByIdempotencyKey(String owner, String idempotencyKey) {
        return store.findByIdempotencyKey(owner, idempotencyKey);
    }

    /** The one writer of JobRunr's jobs (schedules write their recurring jobs with it, the API its runs' progress). */
    public Books books() {
        return books;
    }

    /**
     * Stores the execution, then hands its JobRunr job to {@link NewBooks}, which writes it with
     * others off the submit's path (never the other way round: a crash in between leaves a queued
     * row without a job, which the node that claims it writes); its insert wakes a node (the
     * NOTIFY goes out at its commit).
     * A repeat with the same idempotency key returns the first execution and enqueues nothing.
     * Concurrent submits share one transaction ({@link GroupCommit}); each returns once its own
     * row is committed.
     *
     * @throws TooManyQueuedException when the owner has as many queued executions as it may
     * @throws DiskFull.Refused when the database's disk was seen full moments ago
     */
    public Inserted submit(Submission submission) {
        return submit(submission, null);
    }

    /**
     * As {@link #submit(Submission)}, in the trace {@code caller} names (its {@code traceparent}
     * header; null: a new trace). The {@code execution.submit} span's context is kept with the row,
     * so that every later step's span, on whichever node, joins that trace.
     */
    public Inserted submit(Submission submission, TraceContext caller) {
        Tracing tracing = Tracing.process();
        Span span = tracing.tracer().spanBuilder("execution.submit").setSpanKind(SpanKind.SERVER)
                .setParent(tracing.parent(caller)).setAttribute(AttemptTrace.OWNER, submission.owner()).startSpan();
        try {
            Inserted inserted = admitAndInsert(submission, tracing.keep(span, caller));
            span.setAttribute(AttemptTrace.EXECUTION_ID, inserted.execution().id().toString());
            if (!inserted.created()) {
                span.setAttribute("outrun.idempotent_repeat", true);
            }
            return inserted;
        } catch (RuntimeException e) {
            AttemptTrace.failed(span, e);
            throw e;
        } finally {
            span.end();
        }
    }

    private Inserted admitAndInsert(Submission submission, TraceContext trace) {
        // A repeat of an accepted submission is answered as accepted, full disk or full queue or not.
        try {
            diskFull.check();
            queueGate.admit(submission.owner());
        } catch (DiskFull.Refused | TooManyQueuedException refused) {
            Optional<Execution> first = submission.idempotencyKey() == null ? Optional.empty()
                    : store.findByIdempotencyKey(submission.owner(), submission.idempotencyKey());
            if (first.isPresent()) {
                return new Inserted(first.get(), false);
            }
            throw refused;
        }
        Inserted inserted;
        try {
            inserted = group.insert(submission, trace);
        } catch (RuntimeException e) {
            diskFull.note(e);
            throw e;
        }
        if (inserted.created()) {
            // Its insert woke a node (ExecutionsTable.INSERT), a delayed one's too: the woken node
            // learns when it is due (LeaseStore.Batch#nextDueMs).
            booked(inserted.execution());
        }
        return inserted;
    }

    /**
     * Stores up to a batch of submissions of one caller in ONE transaction and answers each:
     * its row ({@code created} false for an idempotent repeat) or its own failure. An item over
     * its owner's queued cap is refused alone ({@link TooManyQueuedException}); an item whose row
     * the database refuses fails alone (the others are stored again without it). Whole-batch
     * failures are thrown: a full disk seen moments ago ({@link DiskFull.Refused}), and a
     * database that is away, full or read-only when nothing could be stored. Every created
     * execution is booked as a single submit's is; the batch's insert wakes as many nodes as it
     * made executions.
     * {@code caller} (its {@code traceparent}; null: a new trace) parents one span for the batch,
     * which every execution of it keeps.
     */
    public List<Stored> submitBatch(List<Submission> submissions, TraceContext caller) {
        Tracing tracing = Tracing.process();
        Span span = tracing.tracer().spanBuilder("execution.submit_batch").setSpanKind(SpanKind.SERVER)
                .setParent(tracing.parent(caller)).setAttribute("outrun.batch_size", submissions.size()).startSpan();
        try {
            TraceContext trace = tracing.keep(span, caller);
            diskFull.check();
            Stored[] out = new Stored[submissions.size()];
            List<Integer> admitted = new ArrayList<>(submissions.size());
            for (int i = 0; i < submissions.size(); i++) {
                Submission s = submissions.get(i);
                try {
                    queueGate.admit(s.owner());
                    admitted.add(i);
                } catch (TooManyQueuedException refused) {
                    // A repeat of an accepted submission is answered as accepted, full queue or not.
                    Optional<Execution> first = s.idempotencyKey() == null ? Optional.empty()
                            : store.findByIdempotencyKey(s.owner(), s.idempotencyKey());
                    out[i] = first.isPresent() ? Stored.ok(new Inserted(first.get(), false)) : Stored.failed(refused);
                }
            }
            List<Stored> stored = GroupCommit.storeEach(store, admitted.stream().map(submissions::get).toList(),
                    Collections.nCopies(admitted.size(), trace));
            RuntimeException everywhere = null;
            int created = 0;
            for (int k = 0; k < admitted.size(); k++) {
                Stored s = stored.get(k);
                out[admitted.get(k)] = s;
                if (s.failure() != null) {
                    diskFull.note(s.failure());
                    everywhere = GroupCommit.mayBeOneRows(s.failure()) ? everywhere : s.failure();
                } else if (s.inserted().created()) {
                    booked(s.inserted().execution());
                    created++;
                }
            }
            if (everywhere != null && Arrays.stream(out).allMatch(s -> s.failure() != null)) {
                throw everywhere; // nothing stored: the batch as a whole answers the outage
            }
            // The batch's insert woke as many nodes as it made executions (ExecutionsTable.INSERT).
            span.setAttribute("outrun.batch_created", created);
            return Arrays.asList(out);
        } catch (RuntimeException e) {
            AttemptTrace.failed(span, e);
            throw e;
        } finally {
            span.end();
        }
    }

    /**
     * The step after a created execution's row is committed: its JobRunr job, written off the
     * submit's path with others (issue 42; never before the row: a crash before it is written
     * leaves a queued row without a book, which the node that claims it writes). Single submits
     * and batches both come here.
     */
    private void booked(Execution e) {
        newBooks.add(e);
    }

    /** What this node knows of its database's disk (health and submits share it). */
    public DiskFull diskFull() {
        return diskFull;
    }

    /** Only the state, for a poll that waits: the reads before and after its wait re-drive, not each wake-up. */
    public Optional<ExecutionStatus> status(UUID id, String owner) {
        return store.statusOwned(id, owner);
    }

    /** Polls one execution with all its kept output; re-drives it first if its worker's lease has expired. */
    public Optional<Execution> get(UUID id, String owner) {
        return get(id, owner, OutputStore.Read.ALL);
    }

    /** As {@link #get(UUID, String)}, loading only the output {@code read} asks for. */
    public Optional<Execution> get(UUID id, String owner, OutputStore.Read read) {
        Optional<Execution> found = store.findOwned(id, owner, read);
        if (found.isPresent() && found.get().status() == ExecutionStatus.RUNNING && sweep.sweepOne(id)) {
            return store.findOwned(id, owner, read);
        }
        return found;
    }

    /**
     * Appends to the stdin of the owner's queued or running execution (the node that runs it is
     * woken in the same statement); {@code eof} ends it.
     */
    public StdinStore.Written writeStdin(UUID id, String owner, byte[] bytes, boolean eof) {
        return stdin.write(id, owner, bytes, eof);
    }

    /** For a queued execution: the owner's running execution holding the workspace it waits for. */
    public Optional<SubmissionStore.WorkspaceHeld> workspaceHolder(UUID id, String owner) {
        return store.workspaceHolder(id, owner);
    }

    public CancelResult cancel(UUID id, String owner) {
        CancelResult result = store.requestCancel(id, owner);
        switch (result) {
            case CANCELLED_WHILE_QUEUED -> {
                store.find(id, OutputStore.Read.NONE).ifPresent(e -> {
                    newBooks.retire(e.jobId(), "cancelled by its owner");
                    Tracing.process().mark(e.trace(), "execution.end", id, e.attempt(), ExecutionStatus.CANCELLED.wire());
                });
                // Wake anyone long-polling it: no worker will ever write this execution again.
                wakes.wake(Channels.CHANGED, id.toString());
            }
            case REQUESTED -> wakes.wake(Channels.CANCEL, id.toString());
            default -> { }
        }
        if (result == CancelResult.CANCELLED_WHILE_QUEUED || result == CancelResult.REQUESTED) {
            // Its children end with it now, not at the sweeper's next look.
            children.endChildrenOf(id);
        }
        return result;
    }

}
