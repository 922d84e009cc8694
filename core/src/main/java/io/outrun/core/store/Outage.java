package io.outrun.core.store;

import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;

/**
 * Tells a database outage (unreachable, restarting, refusing connections, out of connections)
 * from other failures, so that callers can answer "retry later" instead of "bug".
 */
public final class Outage {

    private Outage() {
    }

    /** True when {@code failure} or one of its causes says the database cannot be reached now. */
    public static boolean is(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLTransientConnectionException) {
                return true; // HikariCP: no connection within its timeout
            }
            if (t instanceof SQLException sql && sql.getSQLState() != null) {
                String state = sql.getSQLState();
                // 08: connection exception; 57P01-57P03: shutdown, crash, cannot connect now;
                // 53300: too many connections.
                if (state.startsWith("08") || state.startsWith("57P") || state.equals("53300")) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * True when {@code failure} or one of its causes says the database takes no writes (SQLSTATE
     * 25006: a standby, or default_transaction_read_only).
     */
    public static boolean readOnly(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLException sql && "25006".equals(sql.getSQLState())) {
                return true;
            }
        }
        return false;
    }

    /**
     * True when {@code failure} or one of its causes says the database's disk is full (SQLSTATE
     * 53100): it answers, but stores nothing new until an operator frees space.
     */
    public static boolean diskFull(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLException sql && "53100".equals(sql.getSQLState())) {
                return true;
            }
        }
        return false;
    }
}
