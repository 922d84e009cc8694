package io.outrun.store;

import io.outrun.sandbox.capture.Captured;

/** New output of a running attempt, flushed under its lease. */
public record OutputUpdate(Lease lease, Captured stdout, Captured stderr) {
}
