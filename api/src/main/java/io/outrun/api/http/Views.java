package io.outrun.api.http;

import io.outrun.client.wire.ErrorInfo;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.IdentityView;
import io.outrun.client.wire.ProgressView;
import io.outrun.client.wire.ResourcesView;
import io.outrun.client.wire.RetryView;
import io.outrun.client.wire.StdinView;
import io.outrun.client.wire.StreamText;
import io.outrun.client.wire.WebhookView;
import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Resources;
import io.outrun.core.execution.Retry;
import io.outrun.core.execution.Webhook;
import io.outrun.core.store.SubmissionStore;
import io.outrun.model.output.Captured;
import java.time.Duration;
import java.time.Instant;

/** Turns stored executions into what the API shows. */
final class Views {

    /** Bytes of each stream a {@link OutputMode#TAIL} answer shows. */
    static final int TAIL_BYTES = 4096;
    /** Characters of the command a light answer shows (the caller sent the command; it rarely needs it back). */
    static final int COMMAND_PREVIEW = 200;

    private final Guidance guidance;

    Views(Guidance guidance) {
        this.guidance = guidance;
    }

    ExecutionView of(Execution e) {
        return of(e, OutputMode.FULL);
    }

    ExecutionView of(Execution e, OutputMode mode) {
        return of(e, mode, Channel.HTTP, null);
    }

    /** As the caller's channel reads it; {@code held}: the run holding the workspace a queued {@code e} waits for. */
    ExecutionView of(Execution e, OutputMode mode, Channel ch, SubmissionStore.WorkspaceHeld held) {
        Duration duration = e.duration(Instant.now());
        ErrorInfo error = e.errorCode() == null ? null : new ErrorInfo(e.errorCode(), e.errorMessage());
        boolean complete = e.status().isTerminal();
        // The position after everything printed so far: passed to /output, it gives only what follows.
        String cursor = new OutputCursor(e.outputEpoch(), OutputSlicer.since(e.stdout(), Long.MAX_VALUE, complete).next(),
                OutputSlicer.since(e.stderr(), Long.MAX_VALUE, complete).next()).encode();
        String command = mode == OutputMode.FULL || e.command().length() <= COMMAND_PREVIEW ? e.command()
                : e.command().substring(0, cutAt(e.command(), COMMAND_PREVIEW)) + "…";
        return ExecutionView.builder()
                .executionId(e.id().toString()).status(e.status().wire()).command(command).exitCode(e.exitCode())
                .attempt(e.attempt()).maxAttempts(e.maxAttempts()).cancelRequested(e.cancelRequested())
                .createdAt(e.createdAt()).startedAt(e.startedAt()).finishedAt(e.finishedAt())
                .durationMs(duration == null ? null : Math.max(0, duration.toMillis()))
                .timeoutMs(e.timeoutMs()).maxOutputBytes(e.maxOutputBytes()).labels(e.labels())
                .stdout(text(e.stdout(), mode, complete)).stderr(text(e.stderr(), mode, complete)).error(error)
                .guidance(guidance.forExecution(e, ch, held)).cursor(cursor).stdin(stdin(e)).resources(resources(e))
                .startsAt(e.startsAt()).retry(retry(e)).webhook(webhook(e.webhook()))
                .parentId(e.lineage().isChild() ? e.lineage().parentId().toString() : null)
                .cancelWithParent(e.lineage().isChild() ? e.lineage().cancelWithParent() : null)
                .identity(e.identityAudience() == null ? null : new IdentityView(e.identityAudience()))
                .progress(e.progress() == null ? null : new ProgressView(e.progress().percent(),
                        e.progress().message(), e.progress().at()))
                .build();
    }

    private static WebhookView webhook(Webhook w) {
        return w == null ? null : new WebhookView(w.url(), w.state(), w.eventId(), w.attempts(),
                w.lastStatus(), w.lastError(), w.lastAttemptAt(), w.nextAttemptAt(), w.deliveredAt());
    }

    private static RetryView retry(Execution e) {
        Retry r = e.retry();
        if (r == null) {
            return null;
        }
        boolean waiting = e.status() == ExecutionStatus.QUEUED && r.retries() > 0;
        return new RetryView(r.maxRetries(), r.backoffMs(), r.on(), r.retries(), r.lastFailure(),
                waiting ? e.enqueuedAt() : null);
    }

    private static ResourcesView resources(Execution e) {
        Resources r = e.resources();
        return r.isEmpty() ? null : new ResourcesView(r.memoryMb(),
                r.cpuMillis() == null ? null : r.cpuMillis() / 1000.0, r.pids(), r.tmpfsMb(), r.network());
    }

    private static StdinView stdin(Execution e) {
        return e.stdin().mode().open()
                ? new StdinView(e.stdin().mode().wire(), e.stdin().bytes(), e.stdin().closed()) : null;
    }

    private static StreamText text(Captured c, OutputMode mode, boolean complete) {
        return switch (mode) {
            case FULL -> new StreamText(c.text(), c.truncated(), c.totalBytes(), null);
            case NONE -> new StreamText(null, c.truncated(), c.totalBytes(), null);
            case TAIL -> {
                // What is kept fits: all of it, head and dropped-marker included.
                if (c.head().length + c.tail().length <= TAIL_BYTES) {
                    yield new StreamText(c.text(), c.truncated(), c.totalBytes(), null);
                }
                long from = OutputSlicer.charStart(c, Math.max(0, c.totalBytes() - TAIL_BYTES));
                if (from == 0) {
                    yield new StreamText(c.text(), c.truncated(), c.totalBytes(), null);
                }
                yield new StreamText(OutputSlicer.since(c, from, complete).text(), c.truncated(), c.totalBytes(), from);
            }
        };
    }

    /** Never cuts between the two halves of a surrogate pair. */
    private static int cutAt(String s, int at) {
        return Character.isLowSurrogate(s.charAt(at)) ? at - 1 : at;
    }
}
