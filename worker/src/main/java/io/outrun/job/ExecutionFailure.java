package io.outrun.job;

/**
 * How the JobRunr job of a failed, timed-out or memory-killed execution ends: JobRunr marks a
 * job FAILED when its method throws, and shows the exception on the job's page. This one carries
 * the execution's error code and message as one line and no stack trace, since nothing in our
 * code went wrong. (JobRunr's retries are off for execution jobs: attempts are Outrun's.)
 */
public final class ExecutionFailure extends RuntimeException {
    public ExecutionFailure(String message) {
        super(message, null, false, false);
    }

    /** The line JobRunr stores as the job's "stack trace": the message alone. */
    @Override
    public String toString() {
        return getMessage();
    }
}
