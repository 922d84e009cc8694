package io.outrun.core.execution;

import java.util.UUID;

/**
 * Where an execution stands among its family: a root ({@link #ROOT}), or a child that a run
 * submitted with its run token (issue 31).
 *
 * @param parentId         the run that submitted it, or null for a root
 * @param depth            0 for a root, its parent's depth + 1 for a child (bounded by the operator)
 * @param cancelWithParent whether it is cancelled when its parent ends (a child's default: true)
 */
public record Lineage(UUID parentId, int depth, boolean cancelWithParent) {

    public static final Lineage ROOT = new Lineage(null, 0, true);

    public boolean isChild() {
        return parentId != null;
    }
}
