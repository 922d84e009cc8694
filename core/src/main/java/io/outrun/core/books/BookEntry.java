package io.outrun.core.books;

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
}
