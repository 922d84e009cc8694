package io.outrun.core.store;

import java.util.List;

/**
 * A statement as a node sends it: its JDBC text and the name bound at each {@code ?}, in order.
 * What {@code bench/fleet} times on a big table (EXPLAIN), so that it measures the very statement
 * the nodes run instead of a copy that can drift from it.
 */
public record SqlText(String jdbc, List<String> names) {
    public SqlText {
        names = List.copyOf(names);
    }
}
