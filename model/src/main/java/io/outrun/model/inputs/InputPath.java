package io.outrun.model.inputs;

import java.nio.charset.StandardCharsets;

/**
 * A path relative to the workdir that stays inside it: no absolute path, no {@code ..}, no NUL, no
 * empty or {@code .} component. Checked by the API (400 naming the file) and again wherever a
 * path is written, because a stored tar is only as safe as the code that wrote it.
 */
public final class InputPath {

    /** Longest path accepted (tar's PAX headers allow more; nobody needs it). */
    public static final int MAX_LENGTH = 1024;
    /** Longest name of one file or directory in bytes: Linux's NAME_MAX, past which no sandbox can write it. */
    public static final int MAX_NAME_BYTES = 255;

    private InputPath() {
    }

    /** The path with duplicate and trailing slashes removed, or IllegalArgumentException saying why not. */
    public static String check(String path) {
        return check(path, MAX_LENGTH);
    }

    /** As {@link #check(String)}, with paths up to {@code maxLength} characters (what a run left may be longer). */
    public static String check(String path, int maxLength) {
        if (path == null || path.isEmpty()) {
            throw new IllegalArgumentException("must be a non-empty path relative to the workdir");
        }
        if (path.length() > maxLength) {
            throw new IllegalArgumentException("is longer than " + maxLength + " characters");
        }
        if (path.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("must not contain NUL");
        }
        if (path.startsWith("/")) {
            throw new IllegalArgumentException("must be relative to the workdir, not absolute: " + path);
        }
        StringBuilder normal = new StringBuilder();
        for (String part : path.split("/")) {
            if (part.isEmpty()) {
                continue;
            }
            if (part.equals("..")) {
                throw new IllegalArgumentException("must stay inside the workdir (no '..'): " + path);
            }
            if (part.equals(".")) {
                continue;
            }
            if (part.getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
                throw new IllegalArgumentException("has a name longer than " + MAX_NAME_BYTES + " bytes, which no file"
                        + " system of the sandbox can hold: " + (part.length() > 40 ? part.substring(0, 40) + "…" : part));
            }
            if (normal.length() > 0) {
                normal.append('/');
            }
            normal.append(part);
        }
        if (normal.length() == 0) {
            throw new IllegalArgumentException("must name a file, not the workdir itself: " + path);
        }
        return normal.toString();
    }
}
