package io.outrun.sandbox;

/**
 * How a run ended.
 *
 * @param exitCode the command's exit code (128+signal when killed)
 * @param timedOut true when the run was killed at its timeout
 * @param killed   true when {@link Run#kill()} ended it: decided from how the run really ended
 *                 (killed by SIGKILL, not for memory) after a kill was asked for, never from the
 *                 mere fact that one was sent: a command that exits by itself first keeps its exit
 * @param oomKilled true when the kernel killed it for memory (the engine's own flag)
 */
public record Exit(int exitCode, boolean timedOut, boolean killed, boolean oomKilled) {

    /** 128 + SIGKILL: what a run killed outright exits with. */
    public static final int SIGKILL_EXIT = 137;

    public Exit(int exitCode, boolean timedOut, boolean killed) {
        this(exitCode, timedOut, killed, false);
    }
}
