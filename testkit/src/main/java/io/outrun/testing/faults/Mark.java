package io.outrun.testing.faults;

/**
 * One line of {@code marks.jsonl}, written by the workload's command itself: {@code start}, an
 * {@code alive} every 100 ms while it works, {@code end} with its exit. All hosts share one clock.
 */
public record Mark(long t, String mark, String executionId, int attempt, String host, Integer exit) {

    boolean isEnd() {
        return "end".equals(mark);
    }

    /** A sign that the command was working at {@code t} (the end is its last act, not work). */
    boolean isWork() {
        return "start".equals(mark) || "alive".equals(mark);
    }
}
