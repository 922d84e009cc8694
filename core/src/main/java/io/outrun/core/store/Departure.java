package io.outrun.core.store;

import io.outrun.core.execution.ExecutionStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * How a running row leaves {@code running} other than by its own end: the re-drive, cancel or
 * fail decision, written once for the worker that gives a run up ({@code LeaseStore}) and the
 * sweep that takes one from a lost worker ({@link RedriveStore}), so the two never disagree. A
 * started attempt that is lost (abandon) is re-driven while attempts remain; a run that never
 * started (hand back) spends no attempt and is re-driven while hand-backs remain; either way a
 * cancel request ends it {@code cancelled}.
 */
public enum Departure {
    // Retries (issue 28) are attempts of their own, counted apart: a lost attempt's budget is
    // max_attempts plus the retries made.
    ABANDON(ExecutionsDepartures.ABANDON_BY_LEASE, ExecutionsDepartures.ABANDON_EXPIRED, Messages.CANCELLED_WORKER_LOST),
    /** Counted against LeaseStore.MAX_HANDBACKS (the 20 written in its statement; DepartureTest holds them equal). */
    HAND_BACK(ExecutionsDepartures.HAND_BACK_BY_LEASE, null, Messages.CANCELLED_BEFORE_START),
    /** A started run its draining node killed: like a hand back, but not counted as one. */
    DRAIN(ExecutionsDepartures.DRAIN_BY_LEASE, null, Messages.CANCELLED_WHILE_DRAINING),
    /**
     * A failed attempt its execution's retry policy runs again (issue 28): re-queued after its
     * backoff and counted as a retry (a retry is an attempt beyond max_attempts, so lease
     * re-drives keep their own budget); {@code :why} is kept as what the last retried attempt
     * ended with. A cancel requested meanwhile is handled before this (LeaseStore#retry).
     */
    RETRY(ExecutionsDepartures.RETRY_BY_LEASE, null, Messages.CANCELLED_WORKER_LOST);

    /** Which running rows a departure moves. */
    public enum Rows {
        /**
         * A worker's own run, still running under a lease that has not expired: the fence of its
         * end, hand back, drain, abandon and retry. Past expiry the run's kill switch may have
         * fired: its end and its last output land together, or not at all (the sweep then
         * decides). Names {@code :id}, {@code :epoch}.
         */
        BY_LEASE,
        /**
         * The rows whose lease expired more than {@code :grace_ms} ago, at most {@code :limit},
         * skipping those another sweep holds; {@code :only_id} null: any.
         */
        EXPIRED
    }

    private final NamedSql byLease;
    /** Null: this departure never takes expired rows. */
    private final NamedSql expired;
    /** What a cancelled row says, by how it left. */
    private final String cancelMessage;

    Departure(NamedSql byLease, NamedSql expired, String cancelMessage) {
        this.byLease = byLease;
        this.expired = expired;
        this.cancelMessage = cancelMessage;
    }

    /** The statement for these rows. */
    public NamedSql sql(Rows rows) {
        NamedSql sql = rows == Rows.BY_LEASE ? byLease : expired;
        if (sql == null) {
            throw new IllegalArgumentException(this + " does not move " + rows + " rows");
        }
        return sql;
    }

    /**
     * Moves the rows {@code rows} picks out of {@code running}.
     *
     * @param failTemplate the failure message (see {@link ExecutionsDepartures#ABANDON_BY_LEASE} for its arguments)
     * @param why          the caller's text, kept in a failure message; null: "nothing"
     * @param whereArgs    the values of {@code rows}' own names, and {@code delay_ms}: how long a
     *                     re-queued row waits before it may be claimed again (0: at once)
     */
    public List<Departed> apply(DataSource dataSource, Rows rows, String errorCode, String failTemplate, String why,
                         NamedSql.Args whereArgs) {
        try (Connection c = dataSource.getConnection()) {
            return apply(c, rows, errorCode, failTemplate, why, whereArgs);
        } catch (SQLException e) {
            throw new StoreException("cannot move executions out of running (" + this + ")", e);
        }
    }

    /** As {@link #apply(DataSource, Rows, String, String, String, NamedSql.Args)}, on {@code c} (in its transaction). */
    public List<Departed> apply(Connection c, Rows rows, String errorCode, String failTemplate, String why,
                         NamedSql.Args whereArgs) throws SQLException {
        NamedSql.Args args = NamedSql.Args.of("error_code", errorCode, "cancel_message", cancelMessage,
                        "fail_template", failTemplate)
                .and("why", why == null ? "nothing" : why.length() > 500 ? why.substring(0, 500) + "…" : why)
                .and(whereArgs);
        List<Departed> moved = new ArrayList<>();
        try (PreparedStatement ps = sql(rows).prepare(c, args)) {
            ps.setQueryTimeout(ExecutionRows.WRITE_TIMEOUT_S);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    moved.add(new Departed(rs.getObject(1, UUID.class), rs.getString(2), rs.getString(3),
                            ExecutionStatus.fromWire(rs.getString(4)), rs.getInt(5), rs.getInt(6)));
                }
            }
        }
        return moved;
    }

    /** The first (only) row {@code rows} picks. */
    public Optional<Departed> applyOne(DataSource dataSource, Rows rows, String errorCode, String failTemplate,
                                          String why, NamedSql.Args whereArgs) {
        return apply(dataSource, rows, errorCode, failTemplate, why, whereArgs).stream().findFirst();
    }
}
