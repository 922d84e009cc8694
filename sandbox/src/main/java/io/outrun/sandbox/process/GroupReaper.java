package io.outrun.sandbox.process;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Kills what is left of the process groups of ended runs: a bash that exited may leave
 * background children in its group. One {@code kill} for all groups that ended in the last
 * quarter second, not one per run: spawning a process per run would cost a trivial command a
 * quarter of its rate.
 */
final class GroupReaper implements AutoCloseable {

    private final ConcurrentLinkedQueue<Long> ended = new ConcurrentLinkedQueue<>();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "outrun-group-reaper");
        t.setDaemon(true);
        return t;
    });

    GroupReaper() {
        timer.scheduleWithFixedDelay(this::reap, 250, 250, TimeUnit.MILLISECONDS);
    }

    /** The leader of {@code pgid} has exited: kill whatever is left in its group soon. */
    void add(long pgid) {
        ended.add(pgid);
    }

    void reap() {
        List<String> command = new ArrayList<>(List.of("kill", "-KILL", "--"));
        for (Long pgid; (pgid = ended.poll()) != null; ) {
            command.add("-" + pgid);
        }
        if (command.size() == 3) {
            return;
        }
        try {
            // Empty groups answer "no such process"; the others are signalled all the same.
            new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start().waitFor(2, TimeUnit.SECONDS);
        } catch (IOException e) {
            // No kill binary: nothing more can be done here; leftover clean-up still runs.
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
        reap();
    }
}
