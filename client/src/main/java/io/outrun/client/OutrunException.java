package io.outrun.client;

/** The root of the client's errors: the API answered with an error, or could not be reached. */
public class OutrunException extends RuntimeException {
    public OutrunException(String message, Throwable cause) {
        super(message, cause);
    }
}
