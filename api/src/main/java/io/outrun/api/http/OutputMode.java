package io.outrun.api.http;

/**
 * How much of an execution's command and output an answer carries ({@code ?output=}). A poll
 * is the call agents make most, so the default is light: a long script and megabytes of kept
 * output would otherwise come back on every poll.
 */
enum OutputMode {
    /** Neither stream's text: state, exit code, byte counts and the cursor only. */
    NONE,
    /** Each stream whole if what is kept fits in {@value Views#TAIL_BYTES} bytes, else its last that many; the default. */
    TAIL,
    /** The whole command and all kept output (head, dropped marker, tail). */
    FULL;

    static final OutputMode DEFAULT = TAIL;

    static OutputMode parse(String raw) {
        if (raw == null || raw.isEmpty()) {
            return DEFAULT;
        }
        return switch (raw) {
            case "none" -> NONE;
            case "tail" -> TAIL;
            case "full" -> FULL;
            default -> throw ApiError.invalid("output", "must be none, tail or full, got: "
                    + (raw.length() > 40 ? raw.substring(0, 40) + "…" : raw));
        };
    }
}
