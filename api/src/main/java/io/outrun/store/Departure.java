package io.outrun.store;

import io.outrun.execution.ExecutionStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * How a running row leaves {@code running} other than by its own end: the requeue, cancel or
 * fail decision, written once for the worker that gives a run up ({@link LeaseStore}) and the
 * sweep that takes one from a lost worker ({@link RedriveStore}), so the two never disagree. A
 * started attempt that is lost (abandon) is re-driven while attempts remain; a run that never
 * started (hand back) spends no attempt and is re-driven while hand-backs remain; either way a
 * cancel request ends it {@code cancelled}.
 */
enum Departure {
    // Retries (issue 28) are attempts of their own, counted apart: a lost attempt's budget is
    // max_attempts plus the retries made.
    ABANDON("e.attempt < e.max_attempts + e.retries", false, false, Messages.CANCELLED_WORKER_LOST),
    HAND_BACK("e.handbacks + 1 < " + LeaseStore.MAX_HANDBACKS, true, true, Messages.CANCELLED_BEFORE_START),
    /** A started run its draining node killed: like a hand back, but not counted as one. */
    DRAIN("true", true, false, Messages.CANCELLED_WHILE_DRAINING),
    /**
     * A failed attempt its execution's retry policy runs again (issue 28): re-queued after its
     * backoff and counted as a retry (a retry is an attempt beyond max_attempts, so lease
     * re-drives keep their own budget); {@code :why} is kept as what the last retried attempt
     * ended with. A cancel requested meanwhile is handled before this (LeaseStore#retry).
     */
    RETRY("e.retries < e.retry_max", false, false, Messages.CANCELLED_WORKER_LOST);

    /**
     * The update; {@code {next}} is the decision, evaluated on the locked, current row.
     * {@code :fail_template} is a format() template whose arguments are attempt, max attempts,
     * lease owner, lease expiry, hand-backs so far, dispatch, and {@code :why}.
     */
    private static final String SQL = """
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

    private final String attemptsLeft;
    /** No attempt spent, and the previous attempt's output shown again. */
    private final boolean handBack;
    private final boolean countsHandBack;
    /** What a cancelled row says, by how it left. */
    private final String cancelMessage;

    Departure(String attemptsLeft, boolean handBack, boolean countsHandBack, String cancelMessage) {
        this.attemptsLeft = attemptsLeft;
        this.handBack = handBack;
        this.countsHandBack = countsHandBack;
        this.cancelMessage = cancelMessage;
    }

    /** The one decision. */
    private String next() {
        return "(CASE WHEN e.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN " + attemptsLeft
                + " THEN 'queued' ELSE 'failed' END)";
    }

    /** The statement for the rows {@code where} picks (a {@code WHERE} clause with its own names). */
    NamedSql sql(String where) {
        // {retried} first: it names {next} itself.
        return NamedSql.of(SQL
                .replace("{retried}", this != RETRY ? "" : "\n  retries = e.retries + CASE WHEN ({next} = 'queued') THEN 1"
                        + " ELSE 0 END, last_failure = :why::text,")
                .replace("{next}", next())
                .replace("{spent_back}", handBack ? "1" : "0")
                .replace("{counted}", countsHandBack ? "1" : "0")
                .replace("{shown_again}", handBack ? "\n  output_epoch = e.prev_output_epoch, started_at = NULL," : "")
                .replace("{where}", where));
    }

    /**
     * Moves the rows {@code where} picks out of {@code running}.
     *
     * @param failTemplate the failure message (see {@link #SQL} for its arguments)
     * @param why          the caller's text, kept in a failure message; null: "nothing"
     * @param whereArgs    the values of {@code where}'s own names, and {@code delay_ms}: how long a
     *                     re-queued row waits before it may be claimed again (0: at once)
     */
    List<Redriven> apply(DataSource dataSource, String where, String errorCode, String failTemplate, String why,
                         NamedSql.Args whereArgs) {
        try (Connection c = dataSource.getConnection()) {
            return apply(c, where, errorCode, failTemplate, why, whereArgs);
        } catch (SQLException e) {
            throw new StoreException("cannot move executions out of running (" + this + ")", e);
        }
    }

    /** As {@link #apply(DataSource, String, String, String, String, NamedSql.Args)}, on {@code c} (in its transaction). */
    List<Redriven> apply(Connection c, String where, String errorCode, String failTemplate, String why,
                         NamedSql.Args whereArgs) throws SQLException {
        NamedSql.Args args = NamedSql.Args.of("error_code", errorCode, "cancel_message", cancelMessage,
                        "fail_template", failTemplate)
                .and("why", why == null ? "nothing" : why.length() > 500 ? why.substring(0, 500) + "…" : why)
                .and(whereArgs);
        List<Redriven> moved = new ArrayList<>();
        try (PreparedStatement ps = sql(where).prepare(c, args)) {
            ps.setQueryTimeout(ExecutionRows.WRITE_TIMEOUT_S);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    moved.add(new Redriven(rs.getObject(1, UUID.class), rs.getString(2), rs.getString(3),
                            ExecutionStatus.fromWire(rs.getString(4)), rs.getInt(5), rs.getInt(6)));
                }
            }
        }
        return moved;
    }

    /** The first (only) row {@code where} picks. */
    java.util.Optional<Redriven> applyOne(DataSource dataSource, String where, String errorCode, String failTemplate,
                                          String why, NamedSql.Args whereArgs) {
        return apply(dataSource, where, errorCode, failTemplate, why, whereArgs).stream().findFirst();
    }
}
