package io.outrun.sandbox;

/**
 * How a run ended.
 *
 * @param exitCode the command's exit code (128+signal when killed)
 * @param timedOut true when the run was killed at its timeout
 * @param killed   true when {@link Run#kill()} ended it (cancel, lost lease)
 */
public record Exit(int exitCode, boolean timedOut, boolean killed) {
}
