package io.outrun.testing;

import io.outrun.store.DatabaseConfig;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/** One number from the database, for assertions: the shared form of the tests' count/single helpers. */
public final class Rows {
    private Rows() {
    }

    /** The first column of the one row {@code sql} answers, with {@code params} bound in order. */
    public static long single(DatabaseConfig db, String sql, Object... params) {
        try (Connection c = DriverManager.getConnection(db.url(), db.user(), db.password());
             PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setObject(i + 1, params[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new AssertionError("no row from: " + sql);
                }
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    /** As {@link #single(DatabaseConfig, String, Object...)} on an open statement. */
    public static long single(Statement st, String sql) {
        try (ResultSet rs = st.executeQuery(sql)) {
            if (!rs.next()) {
                throw new AssertionError("no row from: " + sql);
            }
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }
}
