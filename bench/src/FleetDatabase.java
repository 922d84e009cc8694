import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The database of a harness on its own PostgreSQL server (bench/pg15.sh): Outrun's database owned
 * by the nodes' role, with pg_stat_statements, and a line saying how the server runs. Shared by
 * {@link FleetBench} and {@link ScheduleBench}; the harness itself connects as {@code postgres},
 * so its own statements count nowhere.
 */
final class FleetDatabase {
    private FleetDatabase() {
    }

    /** Creates the role {@code role} and the database {@code outrun} it owns, with pg_stat_statements. */
    static void create(String pgUrl, String role) throws SQLException {
        try (Connection admin = DriverManager.getConnection(pgUrl + "postgres", "postgres", "");
             Statement st = admin.createStatement()) {
            st.execute("CREATE ROLE " + role + " LOGIN");
            st.execute("CREATE DATABASE outrun OWNER " + role);
        }
        try (Connection db = connect(pgUrl); Statement st = db.createStatement()) {
            st.execute("CREATE EXTENSION pg_stat_statements");
        }
    }

    /** A session on Outrun's database as the superuser. */
    static Connection connect(String pgUrl) throws SQLException {
        return DriverManager.getConnection(pgUrl + "outrun", "postgres", "");
    }

    /** How the server runs, for the report's heading. */
    static String settings(Connection db) throws SQLException {
        try (Statement st = db.createStatement(); ResultSet rs = st.executeQuery("SELECT current_setting('server_version'),"
                + " current_setting('fsync'), current_setting('synchronous_commit'), current_setting('shared_buffers')")) {
            rs.next();
            return "PostgreSQL " + rs.getString(1) + " (own server, loopback), fsync=" + rs.getString(2)
                    + ", synchronous_commit=" + rs.getString(3) + ", shared_buffers=" + rs.getString(4)
                    + ", no checkpoint during the run";
        }
    }

    /**
     * The server runs without autovacuum (bench/pg15.sh): vacuuming between windows keeps its WAL
     * out of them. Pruning by the nodes' own statements still counts.
     */
    static void vacuum(Connection db) throws SQLException {
        try (Statement st = db.createStatement()) {
            st.execute("VACUUM (ANALYZE)");
        }
    }
}
