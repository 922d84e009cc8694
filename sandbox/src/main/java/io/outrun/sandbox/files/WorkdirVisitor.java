package io.outrun.sandbox.files;

import java.io.IOException;
import java.io.InputStream;

/**
 * Receives a workdir's entries one at a time. {@code content} is the entry's bytes (empty unless
 * a regular file), valid only during the call: nothing of a file is held beyond what the visitor
 * itself keeps.
 */
@FunctionalInterface
public interface WorkdirVisitor {
    void visit(WorkdirEntry entry, InputStream content) throws IOException;

    /**
     * An entry the read could not hand over ({@code name} as found, {@code why}): a path no file
     * system of the sandbox could hold again, for instance. Ignored unless a visitor must report it.
     */
    default void skipped(String name, String why) throws IOException {
    }

    /**
     * The largest file whose content this visitor reads: a larger one is visited with its size and
     * no content, and a read that cannot skip it (a stream) stops after it, reporting the rest as
     * {@link #skipped}. A sparse file of a petabyte must never be streamed.
     */
    default long maxFileBytes() {
        return Long.MAX_VALUE;
    }
}
