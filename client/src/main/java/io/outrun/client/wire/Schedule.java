package io.outrun.client.wire;

import java.util.List;

/**
 * A recurring schedule, as {@code /v1/schedules} answers it: see the OpenAPI schema {@code Schedule}.
 *
 * @param everyMs         set for an interval schedule (else {@code cron})
 * @param lastExecutionId the execution its last firing made
 * @param fired           firings that made an execution
 * @param skipped         firings that ran nothing (overlap skip, a full queue)
 * @param catchUp         {@code none}, {@code one} or {@code all}: what fires of what was missed while no worker ran
 * @param catchUpWindowMs how far back missed firings are made up for
 * @param paused          true: it fires nothing until resumed
 * @param nextFireAt      when the fleet's clock looks at it next (null while paused)
 */
public record Schedule(String name, String cron, Long everyMs, String timezone, String overlap, String command,
                       String createdAt, String lastFiredAt, String lastExecutionId, long fired, long skipped,
                       String guidance, String catchUp, Long catchUpWindowMs, boolean paused, String nextFireAt) {

    /**
     * The body of {@code POST /v1/schedules}: {@code cron} or {@code everyMs}, and the submission each
     * firing runs; {@code catchUp} and {@code catchUpWindowMs} may be null (one, a day).
     */
    public record Request(String name, String cron, Long everyMs, String timezone, String overlap, String catchUp,
                          Long catchUpWindowMs, SubmitRequest submission) {
        public Request(String name, String cron, Long everyMs, String timezone, String overlap, SubmitRequest submission) {
            this(name, cron, everyMs, timezone, overlap, null, null, submission);
        }
    }

    /** The answer of {@code GET /v1/schedules}. */
    public record Listing(List<Schedule> schedules) {
    }
}
