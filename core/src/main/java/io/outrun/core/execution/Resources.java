package io.outrun.core.execution;

/**
 * What one execution asked of its sandbox beyond the node's defaults, already clamped to the
 * operator's maxima; a null component means "the node's default" (its --memory-mb, --cpus, --pids,
 * --tmpfs-mb). Container runs only: the host-process sandbox enforces none of them.
 *
 * @param memoryMb  memory limit in MiB, swap included
 * @param cpuMillis CPU quota in thousandths of a CPU (the API's {@code cpus} × 1000)
 * @param pids      most processes and threads at once
 * @param tmpfsMb   size of the writable workdir and of /tmp, each, in MiB
 * @param network   {@link #EGRESS}: out through the node's egress proxy to the operator's allowlist;
 *                  null: no network
 */
public record Resources(Integer memoryMb, Integer cpuMillis, Integer pids, Integer tmpfsMb, String network) {

    /** The one network a run may ask for. */
    public static final String EGRESS = "egress";

    public static final Resources NONE = new Resources(null, null, null, null, null);

    public Resources(Integer memoryMb, Integer cpuMillis, Integer pids, Integer tmpfsMb) {
        this(memoryMb, cpuMillis, pids, tmpfsMb, null);
    }

    public Resources {
        if (network != null && !network.equals(EGRESS)) {
            throw new IllegalArgumentException("network must be " + EGRESS + " or null, got: " + network);
        }
    }

    public boolean egress() {
        return EGRESS.equals(network);
    }

    public Resources withNetwork(String value) {
        return new Resources(memoryMb, cpuMillis, pids, tmpfsMb, value);
    }

    /** Smallest values a run may ask (below them the sandbox cannot start a shell). */
    public static final int MIN_MEMORY_MB = 16;
    public static final int MIN_CPU_MILLIS = 10;
    public static final int MIN_PIDS = 8;
    public static final int MIN_TMPFS_MB = 1;

    public boolean isEmpty() {
        return memoryMb == null && cpuMillis == null && pids == null && tmpfsMb == null && network == null;
    }
}
