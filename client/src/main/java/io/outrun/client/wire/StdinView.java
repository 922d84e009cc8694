package io.outrun.client.wire;

/**
 * An execution's stdin, shown when it was submitted with {@code "stdin": true} or {@code "tty": true}.
 *
 * @param mode   pipe | tty
 * @param bytes  bytes written to it so far (by every write, in order)
 * @param closed true once a write sent end of file: nothing more is taken
 */
public record StdinView(String mode, long bytes, boolean closed) {
}
