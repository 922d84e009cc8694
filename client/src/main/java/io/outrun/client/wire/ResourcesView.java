package io.outrun.client.wire;

/**
 * What an execution asked of its sandbox beyond the node's defaults, as the server clamped it;
 * an absent field is the node's default. Container runs only.
 *
 * @param memoryMb memory limit in MiB, swap included
 * @param cpus     CPUs (a fraction allowed)
 * @param pids     most processes and threads at once
 * @param tmpfsMb  size of the writable workdir and of /tmp, each, in MiB
 * @param network  {@code egress} when the run goes out through its node's proxy; absent: no network
 */
public record ResourcesView(Integer memoryMb, Double cpus, Integer pids, Integer tmpfsMb, String network) {
}
