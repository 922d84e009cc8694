package io.outrun.model.inputs;

import java.util.List;

/** An operator's allowlist of names: exact entries, {@code PREFIX*} entries, or {@code *} for all. */
public final class Allowlist {

    private Allowlist() {
    }

    public static boolean allows(List<String> entries, String name) {
        for (String entry : entries) {
            if (entry.equals("*") || entry.equals(name)
                    || (entry.endsWith("*") && name.startsWith(entry.substring(0, entry.length() - 1)))) {
                return true;
            }
        }
        return false;
    }
}
