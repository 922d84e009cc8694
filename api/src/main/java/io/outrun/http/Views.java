package io.outrun.http;

import io.outrun.execution.Execution;
import io.outrun.http.wire.ErrorInfo;
import io.outrun.http.wire.ExecutionView;
import io.outrun.http.wire.StreamText;
import io.outrun.sandbox.capture.Captured;
import java.time.Duration;
import java.time.Instant;

/** Turns stored executions into what the API shows. */
final class Views {

    private final Guidance guidance;

    Views(Guidance guidance) {
        this.guidance = guidance;
    }

    ExecutionView of(Execution e) {
        Duration duration = e.duration(Instant.now());
        ErrorInfo error = e.errorCode() == null ? null : new ErrorInfo(e.errorCode(), e.errorMessage());
        return new ExecutionView(e.id().toString(), e.status().wire(), e.command(), e.exitCode(), e.attempt(),
                e.maxAttempts(), e.cancelRequested(), e.createdAt(), e.startedAt(), e.finishedAt(),
                duration == null ? null : Math.max(0, duration.toMillis()), e.timeoutMs(), e.maxOutputBytes(),
                e.labels(), text(e.stdout()), text(e.stderr()), error, guidance.forExecution(e));
    }

    private static StreamText text(Captured c) {
        return new StreamText(c.text(), c.truncated(), c.totalBytes());
    }
}
