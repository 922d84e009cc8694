package io.outrun.testing.faults;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * The checker's answer for one run: the counts of faults.json, the violations (any one fails the
 * run) and the notes (informational kinds, never failing).
 *
 * @param acknowledged  submits acknowledged with an execution id (distinct executions)
 * @param indeterminate submits whose only answers were "info" (may or may not exist; never lost)
 * @param malformed     lines of the run's files that did not parse (skipped)
 */
public record Verdict(int acknowledged, int indeterminate, List<Violation> violations, List<Violation> notes,
                      List<String> malformed, List<JsonNode> nemesis, Long seed, Double failoverS) {

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    public boolean passed() {
        return violations.isEmpty();
    }

    /** How many findings of {@code kind} (violations and notes alike). */
    public int count(Violation.Kind kind) {
        return (int) (violations.stream().filter(v -> v.kind() == kind).count()
                + notes.stream().filter(v -> v.kind() == kind).count());
    }

    /** faults.json: the agreed fields first, then this checker's additions (see bench/README.md). */
    public ObjectNode toJson() {
        ObjectNode root = JSON.createObjectNode();
        root.put("acknowledged", acknowledged);
        for (Violation.Kind k : Violation.Kind.values()) {
            root.put(k.wire(), count(k));
        }
        root.put("indeterminate", indeterminate);
        root.put("malformed_lines", malformed.size());
        if (failoverS == null) {
            root.putNull("failover_s");
        } else {
            root.put("failover_s", failoverS);
        }
        root.putArray("nemesis").addAll(nemesis);
        if (seed == null) {
            root.putNull("seed");
        } else {
            root.put("seed", seed);
        }
        root.put("passed", passed());
        findings(root.putArray("violations"), violations);
        findings(root.putArray("notes"), notes);
        ArrayNode bad = root.putArray("malformed");
        malformed.forEach(bad::add);
        return root;
    }

    public String toJsonText() {
        try {
            return JSON.writeValueAsString(toJson());
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** One line per count, for a terminal. */
    public String summary() {
        StringBuilder s = new StringBuilder("acknowledged=" + acknowledged);
        for (Violation.Kind k : Violation.Kind.values()) {
            s.append(' ').append(k.wire()).append('=').append(count(k));
        }
        s.append(" indeterminate=").append(indeterminate).append(" malformed_lines=").append(malformed.size());
        s.append(passed() ? " -> PASS" : " -> FAIL (" + violations.size() + " violations)");
        return s.toString();
    }

    private static void findings(ArrayNode into, List<Violation> list) {
        for (Violation v : list) {
            ObjectNode n = into.addObject();
            n.put("kind", v.kind().wire());
            n.put("executionId", v.executionId());
            n.put("detail", v.detail());
        }
    }
}
