package io.outrun.core.owner;

/** A submission refused because its owner has as many queued executions as it may. */
public final class TooManyQueuedException extends RuntimeException {

    private final String owner;
    private final long queued;
    private final int cap;

    public TooManyQueuedException(String owner, long queued, int cap) {
        super("owner " + owner + " has " + queued + " queued executions, its cap is " + cap, null, false, false);
        this.owner = owner;
        this.queued = queued;
        this.cap = cap;
    }

    public String owner() {
        return owner;
    }

    public long queued() {
        return queued;
    }

    public int cap() {
        return cap;
    }
}
