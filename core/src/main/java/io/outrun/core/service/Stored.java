package io.outrun.core.service;

import io.outrun.core.store.SubmissionStore.Inserted;

/**
 * What one submission of several (a batch, a group commit) came to: its row ({@code inserted},
 * with {@code created} false for an idempotent repeat), or the failure that is its own answer
 * (its owner's queue is full, the database refused its row).
 */
public record Stored(Inserted inserted, RuntimeException failure) {

    public static Stored ok(Inserted inserted) {
        return new Stored(inserted, null);
    }

    public static Stored failed(RuntimeException failure) {
        return new Stored(null, failure);
    }

    /** The row, or its failure thrown. */
    public Inserted orThrow() {
        if (failure != null) {
            throw failure;
        }
        return inserted;
    }
}
