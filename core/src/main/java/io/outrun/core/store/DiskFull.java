package io.outrun.core.store;

import java.util.concurrent.TimeUnit;

/**
 * What this node last learned of its database's disk: full (a write failed with SQLSTATE 53100,
 * or the health probe's write did), or not. While a full disk was seen in the last
 * {@link #WINDOW_MS}, submits are refused before they write: a row stored into the last free
 * bytes of a page would be answered 202 and then not run until an operator frees space (issue
 * 25). After the window a submit tries again, so a node whose /health nobody probes still
 * learns when space is back.
 */
public final class DiskFull {

    static final long WINDOW_MS = 10_000;

    /** Thrown instead of writing while the disk is known to be full. */
    public static final class Refused extends RuntimeException {
        public Refused() {
            super("the database's disk is full", null, false, false);
        }
    }

    private volatile long seenAt;
    private volatile boolean seen;

    /** A write failed for a full disk. */
    public void seen() {
        seenAt = System.nanoTime();
        seen = true;
    }

    /** A write needing new space worked. */
    public void cleared() {
        seen = false;
    }

    /**
     * Records {@code failure} when a write failed for the disk; returns whether it did. A
     * {@link Refused} is not such a failure (nothing was written): callers answer it themselves,
     * and counting it would keep the window open for as long as they retry.
     */
    public boolean note(Throwable failure) {
        if (Outage.diskFull(failure)) {
            seen();
            return true;
        }
        return false;
    }

    /** Whether a write failed for the disk after {@code nanoTime} (a {@link System#nanoTime()} reading). */
    public boolean seenAfter(long nanoTime) {
        return seen && seenAt - nanoTime > 0;
    }

    /** Throws {@link Refused} while a full disk was seen within the window. */
    public void check() {
        if (seen && System.nanoTime() - seenAt < TimeUnit.MILLISECONDS.toNanos(WINDOW_MS)) {
            throw new Refused();
        }
    }
}
