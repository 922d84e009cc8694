package io.outrun.client.wire;

import java.util.List;

/**
 * A recurring schedule, as {@code /v1/schedules} answers it: see the OpenAPI schema {@code Schedule}.
 *
 * @param everyMs         set for an interval schedule (else {@code cron})
 * @param lastExecutionId the execution its last firing made
 * @param fired           firings that made an execution
 * @param skipped         firings that ran nothing (overlap skip, a full queue)
 */
public record Schedule(String name, String cron, Long everyMs, String timezone, String overlap, String command,
                       String createdAt, String lastFiredAt, String lastExecutionId, long fired, long skipped,
                       String guidance) {

    /** The body of {@code POST /v1/schedules}: {@code cron} or {@code everyMs}, and the submission each firing runs. */
    public record Request(String name, String cron, Long everyMs, String timezone, String overlap, SubmitRequest submission) {
    }

    /** The answer of {@code GET /v1/schedules}. */
    public record Listing(List<Schedule> schedules) {
    }
}
