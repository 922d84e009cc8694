package io.outrun.model.inputs;

import java.util.Locale;

/**
 * What a run's stdin is: {@code /dev/null} (the default), a pipe kept open for the bytes its owner
 * writes, or a pseudo-terminal that carries stdin and output alike.
 */
public enum StdinMode {
    NONE,
    PIPE,
    TTY;

    /** The name stored and shown: {@code none}, {@code pipe}, {@code tty}. */
    public String wire() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static StdinMode fromWire(String wire) {
        return wire == null ? NONE : valueOf(wire.toUpperCase(Locale.ROOT));
    }

    /** Whether the command's stdin takes what its owner writes. */
    public boolean open() {
        return this != NONE;
    }
}
