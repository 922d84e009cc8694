package io.outrun.core.store;

import java.util.List;

/**
 * New output of a running attempt, written under its lease: the chunks to append, and the stored
 * chunks of each stream that fell out of the kept tail (those ending at or below
 * {@code dropStdoutBelow} / {@code dropStderrBelow}, past the head; 0 = none).
 */
public record OutputUpdate(Lease lease, List<Chunk> chunks, long dropStdoutBelow, long dropStderrBelow) {
}
