package io.outrun.testing.faults;

/**
 * One line of {@code history.jsonl}: a client operation's invocation or completion, as the
 * workload recorded it (see bench/faults formats). Absent fields are null.
 *
 * @param t           host clock, epoch ms
 * @param process     the workload process (one outstanding operation at a time, as in Jepsen)
 * @param op          submit, cancel, stdin, schedule or read
 * @param phase       invoke, ok, fail or info
 * @param owner       the owner, when the workload writes it (schedule lines do)
 * @param schedule    a schedule line's schedule name
 */
public record Op(long t, int process, String op, String phase, String key, String executionId, Integer status,
                 String error, boolean webhook, Integer expectLines, String owner, String schedule) {

    boolean is(String op, String phase) {
        return op.equals(this.op) && phase.equals(this.phase);
    }

    boolean isInvoke() {
        return "invoke".equals(phase);
    }

    /** An ok with 200 or 202: the service said yes (for a submit: with the execution's id). */
    boolean acknowledged() {
        return "ok".equals(phase) && status != null && (status == 200 || status == 202);
    }
}
