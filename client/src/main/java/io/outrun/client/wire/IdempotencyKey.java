package io.outrun.client.wire;

/** What an idempotency key may be, wherever it is sent from (the HTTP header, MCP's run_command). */
public final class IdempotencyKey {

    public static final int MAX_LENGTH = 200;

    private IdempotencyKey() {
    }

    /** 1 to {@value #MAX_LENGTH} printable ASCII characters without spaces: a UUID fits. */
    public static boolean valid(String key) {
        return !key.isEmpty() && key.length() <= MAX_LENGTH && key.matches("[\\x21-\\x7E]+");
    }
}
