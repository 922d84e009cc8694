package io.outrun.core.execution;

import io.outrun.model.inputs.StdinMode;

/**
 * An execution's stdin as stored: its mode, the bytes its owner wrote so far (a write appends at
 * {@code bytes}), and whether the owner sent end of file.
 */
public record StdinState(StdinMode mode, long bytes, boolean closed) {

    public static final StdinState NONE = new StdinState(StdinMode.NONE, 0, false);

    public StdinState {
        mode = mode == null ? StdinMode.NONE : mode;
    }

    public static StdinState of(StdinMode mode) {
        return mode == null || mode == StdinMode.NONE ? NONE : new StdinState(mode, 0, false);
    }
}
