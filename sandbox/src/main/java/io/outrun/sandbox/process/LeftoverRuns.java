package io.outrun.sandbox.process;

import io.outrun.sandbox.Sandbox.LeftoverPolicy;
import io.outrun.sandbox.SandboxException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;

/**
 * The host-process runs of this machine that their worker left (a SIGKILLed worker's commands
 * live on: they have their own session), found through their pid files in the shared runs
 * directory, and the node files that say which sandbox's runs are still its own to judge.
 *
 * <p>A pid file is {@code <execution>.<epoch>.<tag>.pid} (from before the tag:
 * {@code <execution>.<epoch>.pid}) holding {@code <pid> <start time> <lease file>}; a node file
 * is {@code <tag>.node} holding the pid and start time of the JVM whose sandbox has that tag.
 */
final class LeftoverRuns {

    private final Path runs;
    private final String tag;

    LeftoverRuns(Path runs, String tag) {
        this.runs = runs;
        this.tag = tag;
    }

    /** Says that this JVM, by pid and start time, lives: while it does, its runs are its own to judge. */
    void registerNode() throws IOException {
        long self = ProcessHandle.current().pid();
        Files.writeString(nodeFile(tag), self + " " + RunGroups.startTime(self) + "\n");
    }

    /** At the sandbox's close: its runs are any node's to judge from now on. */
    void unregisterNode() {
        try {
            Files.deleteIfExists(nodeFile(tag));
        } catch (IOException ignored) {
            // A node file whose JVM is gone counts for nothing.
        }
    }

    /** {@code <tag>.node}: the JVM (pid and start time) whose sandbox has that tag. */
    private Path nodeFile(String tag) {
        return runs.resolve(tag + ".node");
    }

    /**
     * Whether the sandbox of {@code tag} belongs to a JVM still alive on this host. Its runs are
     * then its own to judge, whoever asks: another deployment on the same host (another database,
     * in which they are not current) or a test beside a benchmark must not kill them. A dead
     * JVM's runs can never have their lease renewed again; any node may judge them.
     */
    private boolean nodeAlive(String tag) {
        try {
            String[] text = Files.readString(nodeFile(tag)).strip().split(" ");
            String start = RunGroups.startTime(Long.parseLong(text[0]));
            return start != null && start.equals(text[1]);
        } catch (IOException | RuntimeException e) {
            return false; // no node file (an older node's runs, or its JVM closed it): judged as before
        }
    }

    /**
     * Kills process groups of runs that are no longer current; runs of another sandbox whose JVM
     * still lives are left to it (see {@link #nodeAlive}). How many were killed.
     */
    int remove(LeftoverPolicy stillCurrent) {
        int removed = 0;
        List<Path> pidFiles;
        try (var files = Files.list(runs)) {
            pidFiles = files.filter(f -> f.getFileName().toString().endsWith(".pid")).toList();
        } catch (IOException e) {
            throw new SandboxException("cannot list leftover runs in " + runs, e);
        }
        if (pidFiles.isEmpty()) {
            return 0;
        }
        RunGroups groups = RunGroups.scan();
        for (Path file : pidFiles) {
            // <execution>.<epoch>.<node tag>.pid (<execution>.<epoch>.pid from before the tag)
            String[] parts = file.getFileName().toString().split("\\.");
            UUID id;
            long epoch;
            long pid;
            String start;
            try {
                if (parts.length != 3 && parts.length != 4) {
                    continue;
                }
                id = UUID.fromString(parts[0]);
                epoch = Long.parseLong(parts[1]);
                if (parts.length == 4 && !parts[2].equals(tag) && nodeAlive(parts[2])) {
                    continue;
                }
                // <pid> <start time> <lease file>; only <pid> in a file from before the start time.
                String[] text = Files.readString(file).strip().split(" ", 3);
                pid = Long.parseLong(text[0]);
                start = text.length > 1 && !text[1].isEmpty() ? text[1] : null;
            } catch (IllegalArgumentException | IOException e) {
                continue;
            }
            try {
                if (pid == 0) {
                    // The worker's placeholder: the run is being started, or its spawn never happened.
                    if (!stillCurrent.isCurrent(id, epoch) && Files.getLastModifiedTime(file).toMillis()
                            < System.currentTimeMillis() - 60_000) {
                        Files.deleteIfExists(file);
                    }
                    continue;
                }
                if (!groups.isLive(pid, start)) {
                    // Every process of the run is gone (ended, or killed by its kill switch): only the
                    // file is left, and deciding about it costs the database nothing.
                    Files.deleteIfExists(file);
                    continue;
                }
                if (stillCurrent.isCurrent(id, epoch)) {
                    continue;
                }
                ProcessRun.killGroup(pid);
                removed++;
                Files.deleteIfExists(file);
            } catch (IOException e) {
                // Left for the next pass.
            }
        }
        return removed;
    }
}
