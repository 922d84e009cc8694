package io.outrun.sandbox.process;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

/**
 * The process groups alive on this host, read once from /proc, and how a run's pid file is told
 * from a stranger's. A run is judged by its group, never by its leader alone: a leader that
 * exec'd another program, or that ended while its background children live on, is still the
 * run. Identity: the leader's start time (field 22 of /proc/PID/stat), which exec keeps and a
 * reused pid does not; a group cannot be taken over while any of its processes lives (the kernel
 * does not hand out a pid still in use as a group id).
 */
final class RunGroups {

    private final Set<Long> live = new HashSet<>();

    private RunGroups() {
    }

    /** Every process group with at least one process that is not a zombie. */
    static RunGroups scan() {
        RunGroups groups = new RunGroups();
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path proc : procs) {
                String[] fields = statFields(proc.resolve("stat"));
                if (fields != null && !fields[0].equals("Z") && !fields[0].equals("X")) {
                    groups.live.add(Long.parseLong(fields[2]));
                }
            }
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot read the process table in /proc", e);
        }
        return groups;
    }

    /**
     * Whether the run of this pid file still has a process. {@code start}: the leader's start
     * time as the wrapper wrote it (null in a file from before it did).
     */
    boolean isLive(long pgid, String start) {
        if (pgid <= 1 || !live.contains(pgid)) {
            return false;
        }
        String now = startTime(pgid);
        // Leader alive with another start time: the pid was handed out again, the group is a stranger's.
        return now == null || start == null || now.equals(start);
    }

    /** The process's start time (clock ticks since boot), or null when it is gone or a zombie. */
    static String startTime(long pid) {
        String[] fields = statFields(Path.of("/proc", Long.toString(pid), "stat"));
        return fields == null || fields[0].equals("Z") ? null : fields[19];
    }

    /** The fields of a /proc stat line after the command name: [0] is field 3 (state). */
    private static String[] statFields(Path stat) {
        try {
            String text = Files.readString(stat);
            // The command name is in parentheses and may hold spaces or parentheses itself.
            return text.substring(text.lastIndexOf(')') + 2).trim().split(" ");
        } catch (IOException | RuntimeException e) {
            return null; // gone meanwhile
        }
    }

    /** The pid file of a run in bubblewrap: bwrap's pid, whose group the watchdog and the clean-up kill. */
    static void writePidFile(Path pidFile, long pid, String lease) throws IOException {
        String start = startTime(pid);
        Files.writeString(pidFile, pid + " " + (start == null ? "" : start) + " " + lease + "\n");
    }
}
