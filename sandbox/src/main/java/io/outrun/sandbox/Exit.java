package io.outrun.sandbox;

/**
 * How a run ended, and who ended it.
 *
 * <p>The run's end is the command's own result (its exit code) when the command exited by itself,
 * or when Outrun ended it (its timeout, a cancel, a lost lease). When something else ended it
 * (the engine shut down, an operator stopped the container, the engine stopped answering), the
 * exit code says nothing about the command: {@link #lostTo} names what happened, and the attempt
 * is lost, not failed.
 *
 * @param exitCode the command's exit code (128+signal when killed)
 * @param timedOut true when the run was killed at its timeout
 * @param killed   true when {@link Run#kill()} ended it: decided from how the run really ended
 *                 (killed by SIGKILL, not for memory) after a kill was asked for, never from the
 *                 mere fact that one was sent: a command that exits by itself first keeps its exit
 * @param oomKilled true when the kernel killed it for memory (the engine's own flag)
 * @param lostTo   null when the command or Outrun ended the run; else what ended it from outside,
 *                 as a sentence for the execution's error message ("the container was stopped
 *                 outside Outrun …")
 * @param memoryKill true when the kernel killed a process of the run for memory while the command
 *                 itself went on (a child of a script that carried on): its exit is its own, and
 *                 the answer should still say so
 */
public record Exit(int exitCode, boolean timedOut, boolean killed, boolean oomKilled, String lostTo, boolean memoryKill) {

    public Exit(int exitCode, boolean timedOut, boolean killed, boolean oomKilled, String lostTo) {
        this(exitCode, timedOut, killed, oomKilled, lostTo, false);
    }

    /** The same exit, saying whether a process of the run (not the command itself) was killed for memory. */
    public Exit withMemoryKill(boolean value) {
        return new Exit(exitCode, timedOut, killed, oomKilled, lostTo, value && !oomKilled);
    }

    /** 128 + SIGKILL: what a run killed outright exits with. */
    public static final int SIGKILL_EXIT = 137;

    public Exit(int exitCode, boolean timedOut, boolean killed) {
        this(exitCode, timedOut, killed, false, null);
    }

    public Exit(int exitCode, boolean timedOut, boolean killed, boolean oomKilled) {
        this(exitCode, timedOut, killed, oomKilled, null);
    }

    /** A run that something outside the command and Outrun ended: the attempt is lost. */
    public static Exit lost(int exitCode, String why) {
        return new Exit(exitCode, false, false, false, why);
    }

    /** True when the engine or an operator ended the run, not the command or Outrun. */
    public boolean lost() {
        return lostTo != null;
    }
}
