package io.outrun.worker.cli;

import io.outrun.core.owner.OwnerLimits;
import picocli.CommandLine.Option;

/** How the fleet is shared between owners: the operator's defaults (`outrun owner set` overrides per owner). */
final class OwnerOptions {

    @Option(names = "--owner-max-running", defaultValue = "${env:OUTRUN_OWNER_MAX_RUNNING:-0}",
            description = "Running executions one owner may have across the fleet; 0 = no cap (default ${DEFAULT-VALUE})."
                    + " Set the same on every API and worker node; `outrun owner set` overrides it per owner")
    int maxRunning;

    @Option(names = "--owner-max-queued", defaultValue = "${env:OUTRUN_OWNER_MAX_QUEUED:-" + OwnerLimits.DEFAULT_MAX_QUEUED + "}",
            description = "Queued executions one owner may have; past it a submission answers 429 too_many_queued"
                    + " (default ${DEFAULT-VALUE}); `outrun owner set` overrides it per owner")
    int maxQueued;

    OwnerLimits toLimits() {
        return OwnerLimits.of(maxRunning, maxQueued);
    }
}
