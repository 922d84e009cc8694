package io.outrun.core.owner;

import io.outrun.core.config.ConfigException;

/**
 * How one fleet is shared between owners, as the operator set it for owners without their own
 * row in {@code owners} ({@code outrun owner set}).
 *
 * @param maxRunning the running executions one owner may have fleet-wide; null: no cap
 * @param maxQueued  the queued executions one owner may have; a submission past it is refused
 *                   with {@code 429 too_many_queued}
 */
public record OwnerLimits(Integer maxRunning, int maxQueued) {

    public static final int DEFAULT_MAX_QUEUED = 100_000;
    public static final OwnerLimits DEFAULTS = new OwnerLimits(null, DEFAULT_MAX_QUEUED);

    public OwnerLimits {
        if (maxRunning != null && maxRunning < 1) {
            throw new ConfigException("--owner-max-running must be at least 1 (leave it out for no cap), got " + maxRunning);
        }
        if (maxQueued < 1) {
            throw new ConfigException("--owner-max-queued must be at least 1, got " + maxQueued);
        }
    }

    /** From the command line, where 0 means "no cap". */
    public static OwnerLimits of(int maxRunningOrZero, int maxQueued) {
        return new OwnerLimits(maxRunningOrZero == 0 ? null : maxRunningOrZero, maxQueued);
    }
}
