package io.outrun.core.store;

import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.JobIds;
import java.util.UUID;

/**
 * An execution a {@link Departure} moved out of {@code running} without its own end: back to
 * {@code queued} (re-driven by the sweep; handed back, drained, abandoned or retried by its
 * worker), or to a terminal state (reaped to {@code failed}, or {@code cancelled}).
 */
public record Departed(UUID id, String owner, String command, ExecutionStatus status, int attempt,
                       int bookSeq) {

    /** The JobRunr job of the attempt that died. */
    public UUID deadJobId() {
        return JobIds.of(id, status == ExecutionStatus.QUEUED ? bookSeq - 1 : bookSeq);
    }

    /** The JobRunr job, the new book, of the next attempt (only when re-queued). */
    public UUID newJobId() {
        return JobIds.of(id, bookSeq);
    }
}
