package io.outrun.core.books;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.store.SubmissionStore;
import java.util.List;
import java.util.function.Supplier;
import org.jobrunr.jobs.states.StateName;

/**
 * How one attempt's JobRunr job ends, decided by the run that knows: the JobRunr state
 * ({@code SUCCEEDED}, {@code FAILED} or {@code DELETED}), the one line that says why (the failure's
 * message or the delete's reason; empty for a success), and the summary for the job's page
 * (owner, attempt, node, exit code, duration, the last lines of output), made by the books' own
 * thread when it writes the end (it may read the output's tail), not on the run's slot.
 */
public record BookEntry(StateName state, String why, Supplier<List<String>> summary) {

    public BookEntry {
        if (state != StateName.SUCCEEDED && state != StateName.FAILED && state != StateName.DELETED) {
            throw new IllegalArgumentException("a job ends SUCCEEDED, FAILED or DELETED, not " + state);
        }
        why = why == null ? "" : why;
    }

    public static BookEntry succeeded(Supplier<List<String>> summary) {
        return new BookEntry(StateName.SUCCEEDED, "", summary);
    }

    public static BookEntry failed(String why, Supplier<List<String>> summary) {
        return new BookEntry(StateName.FAILED, why, summary);
    }

    public static BookEntry deleted(String why, Supplier<List<String>> summary) {
        return new BookEntry(StateName.DELETED, why, summary);
    }

    /**
     * The one mapping from how an execution ended to how its job ends, used by every end of a
     * job as its execution ended (its node's, the sweep's for books left open, an admin's requeue
     * ended again): {@code SUCCEEDED}; {@code DELETED} for a cancel; else {@code FAILED} with
     * {@code why}.
     */
    public static BookEntry as(ExecutionStatus ended, String why, Supplier<List<String>> summary) {
        return switch (ended) {
            case SUCCEEDED -> succeeded(summary);
            case CANCELLED -> deleted(why, summary);
            default -> failed(why, summary);
        };
    }

    /**
     * The end of the job of attempt {@code attempt} of {@code e}, run on {@code node}, as {@code e}
     * ended, with its {@link Summary} (whose output tail is read from {@code store}).
     */
    public static BookEntry mirror(Execution e, int attempt, String node, SubmissionStore store) {
        String message = why(e.status(), e.errorCode(), e.errorMessage());
        return as(e.status(), message, () -> Summary.of(e, attempt, node,
                e.status() == ExecutionStatus.SUCCEEDED ? "" : message, store));
    }

    /** The one line that says how an execution ended: {@code error_code: message}, or its status. */
    public static String why(ExecutionStatus status, String errorCode, String errorMessage) {
        return (errorCode == null ? "" : errorCode + ": ") + (errorMessage == null ? status.wire() : errorMessage);
    }
}
