package io.outrun.api.mcp;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * The MCP sessions of this node by owner, as its auth filter sees them open, get used and close:
 * the SDK keeps every session (with the client's info) in memory until it is deleted or idle for
 * the sweep's interval, so without a cap any owner could fill the node's heap with
 * {@code initialize} calls, and without an owner per session another owner's token could use or
 * delete it. A session this node does not know (the SDK's own 404) passes through untouched.
 */
final class McpSessions {

    /** What one owner may hold open on one node; a host needs one, a few agents a few. */
    static final int MAX_PER_OWNER = 16;

    private final Duration idle;
    private final Map<String, Entry> sessions = new HashMap<>();
    private final Map<String, Integer> opening = new HashMap<>();

    private record Entry(String owner, long lastUsedNanos) {
    }

    McpSessions(Duration idle) {
        this.idle = idle;
    }

    /**
     * Takes a place for a new session of {@code owner}: false when it holds
     * {@value #MAX_PER_OWNER} already (counting initializations under way). Each true is followed
     * by {@link #opened} or {@link #notOpened}.
     */
    synchronized boolean reserve(String owner) {
        long now = System.nanoTime();
        sessions.values().removeIf(e -> now - e.lastUsedNanos > idle.toNanos());
        long held = sessions.values().stream().filter(e -> e.owner.equals(owner)).count() + opening.getOrDefault(owner, 0);
        if (held >= MAX_PER_OWNER) {
            return false;
        }
        opening.merge(owner, 1, Integer::sum);
        return true;
    }

    synchronized void opened(String owner, String sessionId) {
        release(owner);
        sessions.put(sessionId, new Entry(owner, System.nanoTime()));
    }

    synchronized void notOpened(String owner) {
        release(owner);
    }

    /** The owner of a known session (its use counted now), or null when this node does not know it. */
    synchronized String use(String sessionId) {
        Entry e = sessions.get(sessionId);
        if (e == null) {
            return null;
        }
        sessions.put(sessionId, new Entry(e.owner, System.nanoTime()));
        return e.owner;
    }

    synchronized void closed(String sessionId) {
        sessions.remove(sessionId);
    }

    private void release(String owner) {
        opening.computeIfPresent(owner, (k, n) -> n <= 1 ? null : n - 1);
    }
}
