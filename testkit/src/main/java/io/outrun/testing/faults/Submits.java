package io.outrun.testing.faults;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The submits of a history, one per submission identity: (owner, idempotency key) when it has a
 * key, else the execution it was acknowledged as. A completion (ok, fail, info) is paired with the
 * last invocation of the same process and operation, as in Jepsen: a process has one operation
 * outstanding, so the invocation's webhook and expectLines apply to the completion's execution.
 */
final class Submits {

    /**
     * One submission as the client saw it.
     *
     * @param acknowledged the execution ids of its acknowledged answers, with the time of the first
     *                     answer of each (two ids for one key is the duplicated violation)
     */
    record Submit(String owner, String key, boolean webhook, Integer expectLines, Map<String, Long> acknowledged,
                  boolean indeterminate) {
    }

    private Submits() {
    }

    static List<Submit> of(List<Op> history) {
        Map<Integer, Op> outstanding = new HashMap<>();
        Map<String, Builder> byIdentity = new LinkedHashMap<>();
        for (Op o : history) {
            if (!"submit".equals(o.op())) {
                continue;
            }
            if (o.isInvoke()) {
                outstanding.put(o.process(), o);
                continue;
            }
            Op invoke = outstanding.remove(o.process());
            String owner = first(o.owner(), invoke == null ? null : invoke.owner());
            String key = first(o.key(), invoke == null ? null : invoke.key());
            String identity = key != null ? (owner == null ? "" : owner) + "\u0000" + key
                    : o.executionId() != null ? "id\u0000" + o.executionId() : null;
            if (identity == null) {
                continue;   // a key-less submit with no id: nothing to look up
            }
            Builder b = byIdentity.computeIfAbsent(identity, i -> new Builder(owner, key));
            b.webhook |= o.webhook() || (invoke != null && invoke.webhook());
            if (b.expectLines == null) {
                b.expectLines = o.expectLines() != null ? o.expectLines() : invoke == null ? null : invoke.expectLines();
            }
            if (o.acknowledged() && o.executionId() != null) {
                b.acknowledged.putIfAbsent(o.executionId(), o.t());
            } else if ("info".equals(o.phase())) {
                b.indeterminate = true;
            }
        }
        List<Submit> out = new ArrayList<>();
        byIdentity.values().forEach(b -> out.add(new Submit(b.owner, b.key, b.webhook, b.expectLines,
                b.acknowledged, b.indeterminate && b.acknowledged.isEmpty())));
        return out;
    }

    private static String first(String a, String b) {
        return a != null ? a : b;
    }

    private static final class Builder {
        final String owner;
        final String key;
        boolean webhook;
        Integer expectLines;
        final Map<String, Long> acknowledged = new LinkedHashMap<>();
        boolean indeterminate;

        Builder(String owner, String key) {
            this.owner = owner;
            this.key = key;
        }
    }

    /** Every execution id some submit was acknowledged as. */
    static Set<String> acknowledgedIds(List<Submit> submits) {
        Set<String> ids = new LinkedHashSet<>();
        submits.forEach(s -> ids.addAll(s.acknowledged().keySet()));
        return ids;
    }
}
