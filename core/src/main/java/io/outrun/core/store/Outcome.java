package io.outrun.core.store;

import io.outrun.core.execution.ExecutionStatus;

/**
 * How an attempt ended, as its worker writes it, with the last output not yet stored.
 *
 * @param status       a terminal status
 * @param exitCode     the command's exit code, or null when it never ran
 * @param errorCode    a stable error code for anything but success, or null
 * @param errorMessage what happened and what to do, for people and agents
 * @param output       the output still to append and drop (null: none), fenced like a flush
 * @param stdoutTotal  bytes the command wrote to stdout in all
 * @param stderrTotal  bytes the command wrote to stderr in all
 */
public record Outcome(ExecutionStatus status, Integer exitCode, String errorCode, String errorMessage,
                      OutputUpdate output, long stdoutTotal, long stderrTotal) {

    public Outcome {
        if (!status.isTerminal()) {
            throw new IllegalArgumentException("an outcome is terminal, not " + status);
        }
    }

    /**
     * How an error message (or a success's note) starts when the kernel killed a process of the run
     * for memory while the command itself went on: guidance looks for it.
     */
    public static final String MEMORY_KILL_NOTE = "A process of the run was killed by the kernel for using more memory"
            + " than the sandbox's limit";

    /** An end with no output (the command never ran). */
    public static Outcome withoutOutput(ExecutionStatus status, Integer exitCode, String errorCode, String errorMessage) {
        return new Outcome(status, exitCode, errorCode, errorMessage, null, 0, 0);
    }
}
