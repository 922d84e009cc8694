package io.outrun.dispatch;

/**
 * What the dashboard shows as the failure of a job whose attempt lost its lease (its worker died
 * or stopped renewing): one line, no stack trace, since nothing in our code threw.
 */
public final class LostAttempt extends RuntimeException {
    public LostAttempt(String message) {
        super(message, null, false, false);
    }

    @Override
    public String toString() {
        return getMessage();
    }
}
