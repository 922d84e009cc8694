package io.outrun.sandbox.process;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * One host process per node that is every run's kill switch and reaper: a bash in a session of
 * its own, outside the worker's JVM, so that it outlives the worker.
 *
 * <p>Each second it reads the pid file of every run of this node (a placeholder written by the
 * worker before the spawn, then {@code <pid> <start time> <lease file>} written by the run's
 * wrapper before its command) and kills the run's whole process group once
 * the deadline in its lease file has passed: the worker has stopped confirming the lease (dead,
 * paused, cut off from the database) and another node may run the execution's next attempt.
 * While the worker lives it also kills, on the worker's word (a line {@code k <pgid>} on its
 * stdin), what is left of the group of a run whose leader ended: a bash that exited may leave
 * background children.
 *
 * <p>Its stdin is a pipe from the worker: end of file there means the worker is gone (or closed
 * the sandbox). It then stays on guard while any of its runs' groups lives, and leaves once the
 * last one ended or was killed at its deadline.
 *
 * <p>Why one per node and not one per run: a watchdog forked beside each run was about two of the
 * three bash processes a short run cost (a trivial command ran at a third of the rate of
 * {@code ProcessBuilder} + {@code bash -c}). The price: a run's kill switch now lives as long as
 * this one process; if it is killed, the worker starts another at its next run, reap or leftover
 * clean-up pass (the new one finds every pid file again), but a run whose worker and watchdog
 * both died has only the leftover clean-up of the node's next start.
 */
final class NodeWatchdog implements AutoCloseable {

    /**
     * $1: the directory of pid files; $2: this node's tag (its files are {@code *.$2.pid}).
     * Sleeps with {@code read -t 1} (a builtin: no process per second); once the worker's pipe
     * has closed, on that same pipe opened read-write here, which never ends.
     */
    static final String SCRIPT = String.join("\n",
            "shopt -s nullglob; declare -A gone; up=1; last=; nap=",
            "while :; do",
            "  if [ $up = 1 ]; then",
            "    if read -r -t 1 op arg; then",
            // Checked before the deadline pass below, so that the group of a run that ended is
            // killed now, not a second later.
            "      if [ \"$op\" = k ]; then kill -KILL -- \"-$arg\" 2>/dev/null; fi",
            "    elif [ $? -le 128 ]; then",
            "      up=0; exec 0<>/proc/self/fd/0 || nap=1",
            "    fi",
            "  elif [ -n \"$nap\" ]; then sleep 1",
            "  else read -r -t 1 _",
            "  fi",
            "  printf -v now '%(%s)T' -1",
            "  [ \"$now\" = \"$last\" ] && continue",
            "  last=$now; live=0",
            "  for f in \"$1\"/*.\"$2\".pid; do",
            "    [ -n \"${gone[$f]}\" ] && continue",
            "    p=; st=; l=; read -r p st l < \"$f\" 2>/dev/null",
            "    d=; if [ -n \"$l\" ]; then read -r d < \"$l\" 2>/dev/null; [[ $d =~ ^[0-9]+$ ]] || d=; fi",
            // The worker's placeholder: the run is being spawned and writes its pid soon. It keeps
            // the watchdog (whose worker may have died just now) on guard until 2 s past the lease.
            "    if [ \"$p\" = 0 ]; then if [ -n \"$d\" ] && [ \"$now\" -le $((10#$d + 2)) ]; then live=1; fi; continue; fi",
            "    [[ $p =~ ^[0-9]+$ ]] && [ \"$p\" -gt 1 ] || continue",
            // Judged by its group, not its leader: a leader that exec'd or ended with children
            // left is still the run. Group gone: once the worker is gone too, nothing deletes the
            // file; remember it, so that a pid handed out again is never taken for this run.
            "    if ! kill -0 -- \"-$p\" 2>/dev/null; then [ $up = 1 ] || gone[$f]=1; continue; fi",
            // A live leader with another start time: the pid was handed out again, not our run.
            "    s=; read -r s < \"/proc/$p/stat\" 2>/dev/null",
            "    if [ -n \"$s\" ] && [ -n \"$st\" ]; then a=(${s##*) }); if [ \"${a[0]}\" != Z ] && [ \"${a[19]}\" != \"$st\" ]; then gone[$f]=1; continue; fi; fi",
            "    live=1",
            "    if [ -n \"$d\" ] && [ \"$now\" -gt \"$d\" ]; then",
            "      kill -KILL -- \"-$p\" 2>/dev/null; [ $up = 1 ] || gone[$f]=1",
            "    fi",
            "  done",
            "  if [ $up = 0 ] && [ $live = 0 ]; then exit 0; fi",
            "done");

    private final Path runs;
    private final String tag;
    private Process process;
    private OutputStream commands;
    private boolean closed;

    NodeWatchdog(Path runs, String tag) {
        this.runs = runs;
        this.tag = tag;
    }

    /** Starts the watchdog if it is not running (first run, or it died): runs must not start unguarded. */
    synchronized void ensureRunning() throws IOException {
        if (closed) {
            throw new IOException("the process sandbox is closed");
        }
        if (process != null && process.isAlive()) {
            return;
        }
        if (commands != null) {
            closeQuietly(commands);
        }
        ProcessBuilder builder = new ProcessBuilder("/usr/bin/setsid", "/bin/bash", "-c", SCRIPT,
                "outrun-process-watch", runs.toString(), tag);
        builder.environment().clear();
        builder.environment().put("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        // Never a pipe to this JVM: a dead worker's pipe would end the watchdog at its first write.
        builder.redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD);
        process = builder.start();
        commands = process.getOutputStream();
    }

    /**
     * Starts a watchdog again if the one this node had died (someone killed it): called by the
     * periodic leftover clean-up, so that runs started before keep their kill switch even when
     * the node starts nothing new. A node that never ran anything starts none.
     */
    synchronized void revive() {
        if (process != null && !process.isAlive() && !closed) {
            try {
                ensureRunning();
            } catch (IOException e) {
                // The next run's start tries again, and fails loudly then.
            }
        }
    }

    /** The leader of {@code pgid} has exited: kill whatever is left in its group. */
    void reap(long pgid) {
        byte[] line = ("k " + pgid + "\n").getBytes(StandardCharsets.US_ASCII);
        synchronized (this) {
            for (int tries = 0; tries < 2 && !closed; tries++) {
                try {
                    ensureRunning();
                    commands.write(line);
                    commands.flush();
                    return;
                } catch (IOException e) {
                    // It died (broken pipe): the next try starts another one.
                    process = null;
                }
            }
        }
        // Closed, or no watchdog can start: kill directly.
        ProcessRun.killGroup(pgid);
    }

    /** The watchdog's pid, or -1 while none runs (tests). */
    synchronized long pid() {
        return process != null && process.isAlive() ? process.pid() : -1;
    }

    /**
     * As a worker's death does: the watchdog's pipe closes and it stays on guard while any of its
     * runs lives. Runs still open keep their kill switch.
     */
    @Override
    public synchronized void close() {
        closed = true;
        if (commands != null) {
            closeQuietly(commands);
        }
    }

    private static void closeQuietly(OutputStream out) {
        try {
            out.close();
        } catch (IOException ignored) {
            // Already broken: the watchdog is gone or going.
        }
    }
}
