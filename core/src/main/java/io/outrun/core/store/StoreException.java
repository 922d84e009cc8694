package io.outrun.core.store;

/** The database refused or failed a statement; the message names what was being done. */
public class StoreException extends RuntimeException {
    public StoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
