package io.outrun.job;

import io.outrun.dispatch.SweepRunner;
import io.outrun.redrive.RedriveSweep;

/** The recurring JobRunr job that runs the fleet's re-drive sweep on whichever node picks it up. */
public final class SweepJob implements SweepRunner {
    private final RedriveSweep sweep;

    public SweepJob(RedriveSweep sweep) {
        this.sweep = sweep;
    }

    @Override
    public void sweep() {
        sweep.sweep();
    }
}
