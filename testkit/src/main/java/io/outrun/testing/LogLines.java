package io.outrun.testing;

import java.util.regex.Pattern;

/** Counting what nodes logged: the shared form of the tests' count helpers. */
public final class LogLines {
    private LogLines() {
    }

    /** How many times {@code regex} matches in {@code text}. */
    public static int count(String text, String regex) {
        return (int) Pattern.compile(regex).matcher(text).results().count();
    }
}
