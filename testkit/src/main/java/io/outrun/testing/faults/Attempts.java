package io.outrun.testing.faults;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The runs of each execution as their own marks show them: per attempt, the first and last mark
 * (any kind), the last working mark (start or alive), the end if one was written, and the hosts.
 */
final class Attempts {

    record Attempt(String executionId, int attempt, long first, long last, Long end, Integer exit, String hosts) {
        String interval() {
            return "attempt " + attempt + " on " + hosts + " [" + first + ".." + last + "]"
                    + (end == null ? " no end" : " end exit " + exit + " at " + end);
        }
    }

    private Attempts() {
    }

    /** Execution id → its attempts in attempt order. */
    static Map<String, List<Attempt>> of(List<Mark> marks) {
        Map<String, TreeMap<Integer, List<Mark>>> grouped = new LinkedHashMap<>();
        for (Mark m : marks) {
            grouped.computeIfAbsent(m.executionId(), id -> new TreeMap<>())
                    .computeIfAbsent(m.attempt(), a -> new ArrayList<>()).add(m);
        }
        Map<String, List<Attempt>> out = new LinkedHashMap<>();
        grouped.forEach((id, byAttempt) -> {
            List<Attempt> list = new ArrayList<>();
            byAttempt.forEach((attempt, ms) -> {
                ms.sort(Comparator.comparingLong(Mark::t));
                Mark end = ms.stream().filter(Mark::isEnd).findFirst().orElse(null);
                String hosts = String.join("+", ms.stream().map(m -> String.valueOf(m.host())).distinct().toList());
                list.add(new Attempt(id, attempt, ms.get(0).t(), ms.get(ms.size() - 1).t(),
                        end == null ? null : end.t(), end == null ? null : end.exit(), hosts));
            });
            out.put(id, list);
        });
        return out;
    }
}
