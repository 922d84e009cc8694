package io.outrun.core.books;

/**
 * What the dashboard shows as the failure of an execution's job (the command failed, timed out,
 * or its attempt was lost): one line, the execution's error code and message, and no stack trace,
 * since nothing in Outrun's code threw.
 */
public final class JobFailure extends RuntimeException {
    public JobFailure(String message) {
        super(message, null, false, false);
    }

    @Override
    public String toString() {
        return getMessage();
    }
}
