package io.outrun.sandbox;

import java.nio.file.Path;

/**
 * Resource limits of one run. The process backend enforces none of them but the timeout.
 *
 * @param memoryBytes  memory limit, swap included (no swap beyond it); default 512 MiB
 * @param nanoCpus     CPU quota in billionths of a CPU; default 1 CPU
 * @param pids         maximum number of processes and threads; default 256
 * @param tmpfsBytes   size of the writable workdir and of /tmp, each; default 256 MiB
 * @param network      Docker network to attach, or null for none (loopback only)
 * @param egressSocket the node's egress proxy socket, bind-mounted into the run's container (which
 *                     keeps network none), or null: no way out
 * @param apiSocket    the attempt's socket of the node's API bridge, named {@value #API_SOCKET_NAME}
 *                     alone in a directory of its own, which is bind-mounted into the run's
 *                     container (network none all the same); or null: Outrun's API is out of reach
 */
public record Limits(long memoryBytes, long nanoCpus, long pids, long tmpfsBytes, String network,
                     Path egressSocket, Path apiSocket) {

    public static final Limits DEFAULTS = new Limits(512L << 20, 1_000_000_000L, 256, 256L << 20, null);

    /**
     * The API socket's file name: its directory is what a container mounts, so that a pooled
     * container, whose mounts were fixed before its run was known, gets the run's socket by a
     * hard link into its own directory under the same name.
     */
    public static final String API_SOCKET_NAME = "api.sock";

    /**
     * The port on the run's own loopback where its sandbox serves the API socket (the relay: the
     * run has no network but this), which {@code OUTRUN_API} names (issue 31). The sandbox starts
     * the relay, ahead of the run where it can (a pooled container, a spare).
     */
    public static final int API_RELAY_PORT = 7171;

    public Limits(long memoryBytes, long nanoCpus, long pids, long tmpfsBytes, String network) {
        this(memoryBytes, nanoCpus, pids, tmpfsBytes, network, null, null);
    }

    /** The same limits with the egress proxy's socket mounted in (such a run is never pooled). */
    public Limits withEgressSocket(Path socket) {
        return new Limits(memoryBytes, nanoCpus, pids, tmpfsBytes, network, socket, apiSocket);
    }

    /** The same limits with the attempt's API bridge socket mounted in (its directory: see {@link #apiSocket}). */
    public Limits withApiSocket(Path socket) {
        return new Limits(memoryBytes, nanoCpus, pids, tmpfsBytes, network, egressSocket, socket);
    }

    public Limits {
        if (memoryBytes < (4L << 20)) throw new IllegalArgumentException("memoryBytes below 4 MiB: " + memoryBytes);
        if (nanoCpus <= 0) throw new IllegalArgumentException("nanoCpus must be positive: " + nanoCpus);
        if (pids <= 0) throw new IllegalArgumentException("pids must be positive: " + pids);
        if (tmpfsBytes <= 0) throw new IllegalArgumentException("tmpfsBytes must be positive: " + tmpfsBytes);
        if (network != null && (network.isBlank() || network.equals("host") || network.startsWith("container:"))) {
            // host or container:X would share the worker's (or another container's) network namespace.
            throw new IllegalArgumentException("network must name a Docker network other than host and container:*, got: '"
                    + network + "'");
        }
        if (apiSocket != null && (apiSocket.getFileName() == null || !API_SOCKET_NAME.equals(apiSocket.getFileName().toString()))) {
            throw new IllegalArgumentException("the API socket must be named " + API_SOCKET_NAME + " (its directory is mounted), got: "
                    + apiSocket);
        }
    }
}
