package io.outrun.store;

import io.outrun.execution.ExecutionStatus;
import io.outrun.sandbox.capture.Captured;

/**
 * How an attempt ended, as its worker writes it.
 *
 * @param status       a terminal status
 * @param exitCode     the command's exit code, or null when it never ran
 * @param errorCode    a stable error code for anything but success, or null
 * @param errorMessage what happened and what to do, for people and agents
 */
public record Outcome(ExecutionStatus status, Integer exitCode, String errorCode, String errorMessage,
                      Captured stdout, Captured stderr) {

    public Outcome {
        if (!status.isTerminal()) {
            throw new IllegalArgumentException("an outcome is terminal, not " + status);
        }
    }
}
