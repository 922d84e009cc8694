package io.outrun.core.store;

import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.JobIds;
import java.util.UUID;

/**
 * An execution the sweep moved: back to {@code queued} for another attempt, or reaped to
 * {@code failed} once none remain.
 */
public record Redriven(UUID id, String owner, String command, ExecutionStatus status, int attempt,
                       int bookSeq) {

    /** The JobRunr job of the attempt that died. */
    public UUID deadJobId() {
        return JobIds.of(id, status == ExecutionStatus.QUEUED ? bookSeq - 1 : bookSeq);
    }

    /** The JobRunr job that carries the new dispatch (only when re-queued). */
    public UUID newJobId() {
        return JobIds.of(id, bookSeq);
    }
}
