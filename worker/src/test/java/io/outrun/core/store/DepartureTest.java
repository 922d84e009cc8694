package io.outrun.core.store;

import io.outrun.worker.lease.LeaseStore;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * {@link Departure}'s statements are written out, one per departure and rows; this holds each to
 * the one rule they share (the template below, which is how they were made), so that a change to
 * one that is not made to all fails here.
 */
class DepartureTest {

    /** The update; {@code {next}} is the decision, evaluated on the locked, current row. */
    private static final String TEMPLATE = """
            UPDATE executions e SET status = {next},
              attempt = e.attempt - {spent_back}, handbacks = e.handbacks + {counted},{shown_again}{retried}
              dispatch_seq = e.dispatch_seq + CASE WHEN ({next} = 'queued') THEN 1 ELSE 0 END,
              enqueued_at = CASE WHEN ({next} = 'queued') THEN now() + :delay_ms * interval '1 millisecond' ELSE e.enqueued_at END,
              finished_at = CASE WHEN ({next} = 'queued') THEN NULL ELSE now() END,
              error_code = CASE {next} WHEN 'queued' THEN NULL WHEN 'cancelled' THEN 'cancelled' ELSE :error_code::text END,
              error_message = CASE {next} WHEN 'queued' THEN NULL WHEN 'cancelled' THEN :cancel_message::text
                ELSE format(:fail_template::text, e.attempt, e.max_attempts + e.retries, e.lease_owner,
                  (SELECT l.expires_at FROM leases l WHERE l.execution_id = e.id), e.handbacks + 1, e.dispatch_seq, :why::text) END,
              lease_owner = NULL, updated_at = now()
            {where}
            RETURNING e.id, e.owner, left(e.command, 200), e.status, e.attempt, e.dispatch_seq""";

    private static final String BY_LEASE = """
            WHERE e.id = :id AND e.lease_epoch = :epoch AND e.status = 'running'
              AND EXISTS (SELECT 1 FROM leases l WHERE l.execution_id = e.id AND l.epoch = e.lease_epoch
                AND l.expires_at > now())""";

    private static final String EXPIRED = """
            WHERE e.status = 'running' AND e.id IN (SELECT execution_id FROM leases
              WHERE expires_at < now() - :grace_ms * interval '1 millisecond'
                AND (:only_id::uuid IS NULL OR execution_id = :only_id::uuid)
              ORDER BY expires_at LIMIT :limit FOR UPDATE SKIP LOCKED)""";

    private static String expected(String attemptsLeft, boolean handBack, boolean countsHandBack, boolean retry,
                                   String where) {
        String next = "(CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN " + attemptsLeft
                + " THEN 'queued' ELSE 'failed' END)";
        // {retried} first: it names {next} itself.
        return TEMPLATE
                .replace("{retried}", !retry ? "" : "\n  retries = e.retries + CASE WHEN ({next} = 'queued') THEN 1"
                        + " ELSE 0 END, last_failure = :why::text,")
                .replace("{next}", next)
                .replace("{spent_back}", handBack ? "1" : "0")
                .replace("{counted}", countsHandBack ? "1" : "0")
                .replace("{shown_again}", handBack ? "\n  output_epoch = e.prev_output_epoch, started_at = NULL," : "")
                .replace("{where}", where);
    }

    @Test
    void eachStatementIsTheOneUpdateWithItsDecisionAndRows() {
        String abandon = "e.attempt < e.max_attempts + e.retries";
        assertThat(Departure.ABANDON.sql(Departure.Rows.BY_LEASE).text())
                .isEqualTo(expected(abandon, false, false, false, BY_LEASE));
        assertThat(Departure.ABANDON.sql(Departure.Rows.EXPIRED).text())
                .isEqualTo(expected(abandon, false, false, false, EXPIRED));
        assertThat(Departure.HAND_BACK.sql(Departure.Rows.BY_LEASE).text())
                .isEqualTo(expected("e.handbacks + 1 < " + LeaseStore.MAX_HANDBACKS, true, true, false, BY_LEASE));
        assertThat(Departure.DRAIN.sql(Departure.Rows.BY_LEASE).text())
                .isEqualTo(expected("true", true, false, false, BY_LEASE));
        assertThat(Departure.RETRY.sql(Departure.Rows.BY_LEASE).text())
                .isEqualTo(expected("e.retries < e.retry_max", false, false, true, BY_LEASE));
    }

    @Test
    void onlyAnAbandonTakesExpiredRows() {
        for (Departure d : new Departure[] {Departure.HAND_BACK, Departure.DRAIN, Departure.RETRY}) {
            assertThatThrownBy(() -> d.sql(Departure.Rows.EXPIRED)).isInstanceOf(IllegalArgumentException.class);
        }
    }
}
