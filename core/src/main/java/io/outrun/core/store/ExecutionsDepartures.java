package io.outrun.core.store;

/**
 * The {@code executions} table's departures: how a running row leaves running other than by its
 * own end, run by {@link Departure} for the node that holds the lease (LeaseStore: abandon, hand
 * back, drain, retry) and for the sweep (RedriveStore: abandon the rows whose lease expired).
 * Part of the table's home with {@link ExecutionsTable}, apart for their size: five statements
 * that are one rule written out five times (CONTRIBUTING.md, "SQL").
 */
public final class ExecutionsDepartures {

    /**
     * How a running row leaves running other than by its own end ({@link Departure}): one
     * statement per departure and rows, written out (no text is put together at run time). Each is the same update: the decision
     * {@code CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN <attempts left>
     * THEN 'queued' ELSE 'failed' END}, repeated in each column it decides, evaluated on the
     * locked, current row; a hand back spends no attempt back ({@code attempt - 1}) and shows the
     * previous attempt's output again ({@code output_epoch = prev_output_epoch}); a retry counts
     * itself and keeps {@code :why} as the last failure. {@code :fail_template} is a format()
     * template whose arguments are attempt, max attempts, lease owner, lease expiry, hand-backs
     * so far, dispatch, and {@code :why}; {@code :delay_ms} is how long a re-queued row waits
     * before it may be claimed again (0: at once). {@code DepartureTest} holds each statement to
     * the rules above.
     */
    public static final NamedSql ABANDON_BY_LEASE = NamedSql.of("""
            UPDATE executions e SET status = (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.attempt < e.max_attempts + e.retries THEN 'queued' ELSE 'failed' END),
              attempt = e.attempt - 0, handbacks = e.handbacks + 0,
              dispatch_seq = e.dispatch_seq + CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.attempt < e.max_attempts + e.retries THEN 'queued' ELSE 'failed' END) = 'queued') THEN 1 ELSE 0 END,
              enqueued_at = CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.attempt < e.max_attempts + e.retries THEN 'queued' ELSE 'failed' END) = 'queued') THEN now() + :delay_ms * interval '1 millisecond' ELSE e.enqueued_at END,
              finished_at = CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.attempt < e.max_attempts + e.retries THEN 'queued' ELSE 'failed' END) = 'queued') THEN NULL ELSE now() END,
              error_code = CASE (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.attempt < e.max_attempts + e.retries THEN 'queued' ELSE 'failed' END) WHEN 'queued' THEN NULL WHEN 'cancelled' THEN 'cancelled' ELSE :error_code::text END,
              error_message = CASE (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.attempt < e.max_attempts + e.retries THEN 'queued' ELSE 'failed' END) WHEN 'queued' THEN NULL WHEN 'cancelled' THEN :cancel_message::text
                ELSE format(:fail_template::text, e.attempt, e.max_attempts + e.retries, e.lease_owner,
                  (SELECT l.expires_at FROM leases l WHERE l.execution_id = e.id), e.handbacks + 1, e.dispatch_seq, :why::text) END,
              lease_owner = NULL, updated_at = now()
            WHERE e.id = :id AND e.lease_epoch = :epoch AND e.status = 'running'
              AND EXISTS (SELECT 1 FROM leases l WHERE l.execution_id = e.id AND l.epoch = e.lease_epoch
                AND l.expires_at > now())
            RETURNING e.id, e.owner, left(e.command, 200), e.status, e.attempt, e.dispatch_seq""");

    public static final NamedSql HAND_BACK_BY_LEASE = NamedSql.of("""
            UPDATE executions e SET status = (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.handbacks + 1 < 20 THEN 'queued' ELSE 'failed' END),
              attempt = e.attempt - 1, handbacks = e.handbacks + 1,
              output_epoch = e.prev_output_epoch, started_at = NULL,
              dispatch_seq = e.dispatch_seq + CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.handbacks + 1 < 20 THEN 'queued' ELSE 'failed' END) = 'queued') THEN 1 ELSE 0 END,
              enqueued_at = CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.handbacks + 1 < 20 THEN 'queued' ELSE 'failed' END) = 'queued') THEN now() + :delay_ms * interval '1 millisecond' ELSE e.enqueued_at END,
              finished_at = CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.handbacks + 1 < 20 THEN 'queued' ELSE 'failed' END) = 'queued') THEN NULL ELSE now() END,
              error_code = CASE (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.handbacks + 1 < 20 THEN 'queued' ELSE 'failed' END) WHEN 'queued' THEN NULL WHEN 'cancelled' THEN 'cancelled' ELSE :error_code::text END,
              error_message = CASE (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.handbacks + 1 < 20 THEN 'queued' ELSE 'failed' END) WHEN 'queued' THEN NULL WHEN 'cancelled' THEN :cancel_message::text
                ELSE format(:fail_template::text, e.attempt, e.max_attempts + e.retries, e.lease_owner,
                  (SELECT l.expires_at FROM leases l WHERE l.execution_id = e.id), e.handbacks + 1, e.dispatch_seq, :why::text) END,
              lease_owner = NULL, updated_at = now()
            WHERE e.id = :id AND e.lease_epoch = :epoch AND e.status = 'running'
              AND EXISTS (SELECT 1 FROM leases l WHERE l.execution_id = e.id AND l.epoch = e.lease_epoch
                AND l.expires_at > now())
            RETURNING e.id, e.owner, left(e.command, 200), e.status, e.attempt, e.dispatch_seq""");

    public static final NamedSql DRAIN_BY_LEASE = NamedSql.of("""
            UPDATE executions e SET status = (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN true THEN 'queued' ELSE 'failed' END),
              attempt = e.attempt - 1, handbacks = e.handbacks + 0,
              output_epoch = e.prev_output_epoch, started_at = NULL,
              dispatch_seq = e.dispatch_seq + CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN true THEN 'queued' ELSE 'failed' END) = 'queued') THEN 1 ELSE 0 END,
              enqueued_at = CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN true THEN 'queued' ELSE 'failed' END) = 'queued') THEN now() + :delay_ms * interval '1 millisecond' ELSE e.enqueued_at END,
              finished_at = CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN true THEN 'queued' ELSE 'failed' END) = 'queued') THEN NULL ELSE now() END,
              error_code = CASE (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN true THEN 'queued' ELSE 'failed' END) WHEN 'queued' THEN NULL WHEN 'cancelled' THEN 'cancelled' ELSE :error_code::text END,
              error_message = CASE (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN true THEN 'queued' ELSE 'failed' END) WHEN 'queued' THEN NULL WHEN 'cancelled' THEN :cancel_message::text
                ELSE format(:fail_template::text, e.attempt, e.max_attempts + e.retries, e.lease_owner,
                  (SELECT l.expires_at FROM leases l WHERE l.execution_id = e.id), e.handbacks + 1, e.dispatch_seq, :why::text) END,
              lease_owner = NULL, updated_at = now()
            WHERE e.id = :id AND e.lease_epoch = :epoch AND e.status = 'running'
              AND EXISTS (SELECT 1 FROM leases l WHERE l.execution_id = e.id AND l.epoch = e.lease_epoch
                AND l.expires_at > now())
            RETURNING e.id, e.owner, left(e.command, 200), e.status, e.attempt, e.dispatch_seq""");

    public static final NamedSql RETRY_BY_LEASE = NamedSql.of("""
            UPDATE executions e SET status = (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.retries < e.retry_max THEN 'queued' ELSE 'failed' END),
              attempt = e.attempt - 0, handbacks = e.handbacks + 0,
              retries = e.retries + CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.retries < e.retry_max THEN 'queued' ELSE 'failed' END) = 'queued') THEN 1 ELSE 0 END, last_failure = :why::text,
              dispatch_seq = e.dispatch_seq + CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.retries < e.retry_max THEN 'queued' ELSE 'failed' END) = 'queued') THEN 1 ELSE 0 END,
              enqueued_at = CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.retries < e.retry_max THEN 'queued' ELSE 'failed' END) = 'queued') THEN now() + :delay_ms * interval '1 millisecond' ELSE e.enqueued_at END,
              finished_at = CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.retries < e.retry_max THEN 'queued' ELSE 'failed' END) = 'queued') THEN NULL ELSE now() END,
              error_code = CASE (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.retries < e.retry_max THEN 'queued' ELSE 'failed' END) WHEN 'queued' THEN NULL WHEN 'cancelled' THEN 'cancelled' ELSE :error_code::text END,
              error_message = CASE (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.retries < e.retry_max THEN 'queued' ELSE 'failed' END) WHEN 'queued' THEN NULL WHEN 'cancelled' THEN :cancel_message::text
                ELSE format(:fail_template::text, e.attempt, e.max_attempts + e.retries, e.lease_owner,
                  (SELECT l.expires_at FROM leases l WHERE l.execution_id = e.id), e.handbacks + 1, e.dispatch_seq, :why::text) END,
              lease_owner = NULL, updated_at = now()
            WHERE e.id = :id AND e.lease_epoch = :epoch AND e.status = 'running'
              AND EXISTS (SELECT 1 FROM leases l WHERE l.execution_id = e.id AND l.epoch = e.lease_epoch
                AND l.expires_at > now())
            RETURNING e.id, e.owner, left(e.command, 200), e.status, e.attempt, e.dispatch_seq""");

    public static final NamedSql ABANDON_EXPIRED = NamedSql.of("""
            UPDATE executions e SET status = (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.attempt < e.max_attempts + e.retries THEN 'queued' ELSE 'failed' END),
              attempt = e.attempt - 0, handbacks = e.handbacks + 0,
              dispatch_seq = e.dispatch_seq + CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.attempt < e.max_attempts + e.retries THEN 'queued' ELSE 'failed' END) = 'queued') THEN 1 ELSE 0 END,
              enqueued_at = CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.attempt < e.max_attempts + e.retries THEN 'queued' ELSE 'failed' END) = 'queued') THEN now() + :delay_ms * interval '1 millisecond' ELSE e.enqueued_at END,
              finished_at = CASE WHEN ((CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.attempt < e.max_attempts + e.retries THEN 'queued' ELSE 'failed' END) = 'queued') THEN NULL ELSE now() END,
              error_code = CASE (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.attempt < e.max_attempts + e.retries THEN 'queued' ELSE 'failed' END) WHEN 'queued' THEN NULL WHEN 'cancelled' THEN 'cancelled' ELSE :error_code::text END,
              error_message = CASE (CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN e.attempt < e.max_attempts + e.retries THEN 'queued' ELSE 'failed' END) WHEN 'queued' THEN NULL WHEN 'cancelled' THEN :cancel_message::text
                ELSE format(:fail_template::text, e.attempt, e.max_attempts + e.retries, e.lease_owner,
                  (SELECT l.expires_at FROM leases l WHERE l.execution_id = e.id), e.handbacks + 1, e.dispatch_seq, :why::text) END,
              lease_owner = NULL, updated_at = now()
            WHERE e.status = 'running' AND e.id IN (SELECT execution_id FROM leases
              WHERE expires_at < now() - :grace_ms * interval '1 millisecond'
                AND (:only_id::uuid IS NULL OR execution_id = :only_id::uuid)
              ORDER BY expires_at LIMIT :limit FOR UPDATE SKIP LOCKED)
            RETURNING e.id, e.owner, left(e.command, 200), e.status, e.attempt, e.dispatch_seq""");

    private ExecutionsDepartures() {
    }
}
