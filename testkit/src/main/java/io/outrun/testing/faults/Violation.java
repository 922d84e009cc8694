package io.outrun.testing.faults;

/**
 * One finding of the checker: a violation (exit 1) or, for the informational kinds, a note.
 *
 * @param executionId the execution it is about (null when it is about a key or a schedule)
 * @param detail      what was seen, with the times and ids needed to look it up
 */
public record Violation(Kind kind, String executionId, String detail) {

    /** What the checker looks for; the wire name is the key counted in faults.json. */
    public enum Kind {
        LOST("lost", true),
        DUPLICATED("duplicated", true),
        OVERLAPS("overlaps", true),
        CANCELLED_RAN_ON("cancelled_ran_on", true),
        WEBHOOKS_MISSING("webhooks_missing", true),
        WEBHOOK_IDS_DIFFER("webhook_ids_differ", true),
        FIRINGS_DOUBLED("firings_doubled", true),
        OUTPUT_INCOMPLETE("output_incomplete", true),
        /** At-least-once execution at work, not a fault: see HistoryChecker. */
        RERAN_AFTER_END("reran_after_end", false);

        private final String wire;
        private final boolean violation;

        Kind(String wire, boolean violation) {
            this.wire = wire;
            this.violation = violation;
        }

        public String wire() {
            return wire;
        }

        public boolean isViolation() {
            return violation;
        }
    }
}
