package io.outrun.core.store;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * One transaction on a connection: the work's writes commit together when it says so, and roll
 * back when it says not to or throws; the connection goes back to autocommit either way (it
 * returns to the pool).
 */
public final class Transaction {

    private Transaction() {
    }

    /** What runs inside; it answers whether to commit along with its result. */
    @FunctionalInterface
    public interface Work<T> {
        Result<T> run(Connection c) throws SQLException;
    }

    /** A work's result and whether its writes stand. */
    public record Result<T>(T value, boolean commit) {
        public static <T> Result<T> commit(T value) {
            return new Result<>(value, true);
        }

        public static <T> Result<T> rollback(T value) {
            return new Result<>(value, false);
        }
    }

    public static <T> T on(Connection c, Work<T> work) throws SQLException {
        c.setAutoCommit(false);
        T value;
        try {
            Result<T> result = work.run(c);
            if (result.commit()) {
                c.commit();
            } else {
                c.rollback();
            }
            value = result.value();
        } catch (SQLException | RuntimeException e) {
            abandon(c, e);
            throw e;
        }
        c.setAutoCommit(true);
        return value;
    }

    /**
     * After {@code failure} inside a transaction on {@code c}: rolls back and puts autocommit back,
     * and lets {@code failure} stay what the caller throws. On a dead connection (its server died:
     * a restart, a failover) these fail too, with the pool's "Connection is closed", which says
     * nothing of an outage: thrown instead, it turned a 503 into a 500 (issue 43).
     */
    public static void abandon(Connection c, Exception failure) {
        try {
            c.rollback();
        } catch (SQLException | RuntimeException e) {
            failure.addSuppressed(e);
        }
        try {
            c.setAutoCommit(true);
        } catch (SQLException | RuntimeException e) {
            failure.addSuppressed(e);
        }
    }
}
