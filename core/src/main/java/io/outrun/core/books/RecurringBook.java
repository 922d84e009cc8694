package io.outrun.core.books;

import org.jobrunr.scheduling.RecurringJobBuilder;

/**
 * A schedule's recurring job as {@link Books#recurring} made it, checked by JobRunr but not
 * written yet ({@link Books#schedule} writes it): a schedule's row is stored between the two, so
 * a cron JobRunr refuses leaves nothing behind.
 */
public final class RecurringBook {
    private final RecurringJobBuilder job;

    RecurringBook(RecurringJobBuilder job) {
        this.job = job;
    }

    RecurringJobBuilder job() {
        return job;
    }
}
