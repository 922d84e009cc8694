package io.outrun.testing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Rows for tests, in raw SQL on a test database: the shared form of the tests' count/single
 * helpers, of their fixtures that move a row's clock (an expired lease, an old enqueue), and a
 * factory of {@code executions} rows ({@link #execution()}).
 *
 * <p>Reads are unchecked (they sit in {@link Await} probes); writes throw {@link SQLException},
 * since a test may expect the database to refuse one.
 */
public final class Rows {

    private final DataSource db;

    private Rows(DataSource db) {
        this.db = db;
    }

    /** Rows of the database behind {@code db} (a node's pool, say). */
    public static Rows on(DataSource db) {
        return new Rows(db);
    }

    /** Rows of the database at {@code url}, one connection per call; fits {@link TestDatabase.As}. */
    public static Rows on(String url, String user, String password) {
        return new Rows(TestDatabase.dataSource(url, user, password));
    }

    /** The first column of the one row {@code sql} answers, with {@code params} bound in order. */
    public long single(String sql, Object... params) {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, params);
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

    /** As {@link #single(String, Object...)} on an open statement. */
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

    /** Runs one statement with {@code params} bound in order; returns how many rows it changed. */
    public int update(String sql, Object... params) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, params);
            return ps.executeUpdate();
        }
    }

    /** Makes the lease of execution {@code id} expired {@code ago}; returns 1 when it had one. */
    public int expireLease(UUID id, Duration ago) throws SQLException {
        return update("UPDATE leases SET expires_at = now() - ? * interval '1 millisecond' WHERE execution_id = ?",
                ago.toMillis(), id);
    }

    /** Makes execution {@code id} enqueued {@code ago}, as if its dispatch had waited that long. */
    public int enqueuedAgo(UUID id, Duration ago) throws SQLException {
        return update("UPDATE executions SET enqueued_at = now() - ? * interval '1 millisecond' WHERE id = ?",
                ago.toMillis(), id);
    }

    /** As {@link #enqueuedAgo(UUID, Duration)} for every execution of the database. */
    public int allEnqueuedAgo(Duration ago) throws SQLException {
        return update("UPDATE executions SET enqueued_at = now() - ? * interval '1 millisecond'", ago.toMillis());
    }

    /** A new {@code executions} row, {@code queued} with defaults; set what the test is about, then {@link ExecutionRow#insert()}. */
    public ExecutionRow execution() {
        return new ExecutionRow(this);
    }

    private static void bind(PreparedStatement ps, Object... params) throws SQLException {
        for (int i = 0; i < params.length; i++) {
            ps.setObject(i + 1, params[i]);
        }
    }

    /**
     * An {@code executions} row written as it is, without the store's rules (a fixture, so a
     * test can start from any state). Defaults: a random id, owner {@code alice}, command
     * {@code true}, status {@code queued}, attempt 0 of 3, a 60 s timeout, 1 MiB of output, created
     * and enqueued now. A {@code running} row gets a lease (owner {@code test-node/1}, epoch = its
     * attempt, expiring in 30 s unless set); a terminal row gets {@code finished_at = now()}.
     */
    public static final class ExecutionRow {
        private final Rows rows;
        private UUID id = UUID.randomUUID();
        private String owner = "alice";
        private String command = "true";
        private String status = "queued";
        private int attempt;
        private int maxAttempts = 3;
        private long timeoutMs = 60_000;
        private int maxOutputBytes = 1 << 20;
        private String leaseHolder = "test-node/1";
        private Duration leaseExpiresIn = Duration.ofSeconds(30);
        private Duration enqueuedAgo = Duration.ZERO;
        private String errorCode;
        private Integer exitCode;

        private ExecutionRow(Rows rows) {
            this.rows = rows;
        }

        public ExecutionRow id(UUID id) {
            this.id = id;
            return this;
        }

        public ExecutionRow owner(String owner) {
            this.owner = owner;
            return this;
        }

        public ExecutionRow command(String command) {
            this.command = command;
            return this;
        }

        /** The wire name: {@code queued}, {@code running}, {@code succeeded}, {@code failed}, {@code timed_out}, {@code cancelled}. */
        public ExecutionRow status(String status) {
            this.status = status;
            return this;
        }

        public ExecutionRow attempt(int attempt) {
            this.attempt = attempt;
            return this;
        }

        public ExecutionRow maxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
            return this;
        }

        public ExecutionRow timeout(Duration timeout) {
            this.timeoutMs = timeout.toMillis();
            return this;
        }

        /** A running row's lease holder (an incarnation, {@code node/random}) and how long its lease still runs (negative: expired). */
        public ExecutionRow lease(String owner, Duration expiresIn) {
            this.leaseHolder = owner;
            this.leaseExpiresIn = expiresIn;
            return this;
        }

        public ExecutionRow enqueuedAgo(Duration ago) {
            this.enqueuedAgo = ago;
            return this;
        }

        /** A terminal row's end: its exit code (may be null) and error code (null when it succeeded). */
        public ExecutionRow ended(Integer exitCode, String errorCode) {
            this.exitCode = exitCode;
            this.errorCode = errorCode;
            return this;
        }

        /** Writes the row (and a running row's lease) in one transaction; returns its id. */
        public UUID insert() throws SQLException {
            boolean running = "running".equals(status);
            boolean terminal = !running && !"queued".equals(status);
            try (Connection c = rows.db.getConnection()) {
                c.setAutoCommit(false);
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO executions (id, owner, command, timeout_ms,"
                        + " max_output_bytes, status, attempt, max_attempts, lease_owner, lease_epoch, output_epoch,"
                        + " prev_output_epoch, enqueued_at, started_at, finished_at, exit_code, error_code)"
                        + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now() - ? * interval '1 millisecond',"
                        + " CASE WHEN ? THEN now() END, CASE WHEN ? THEN now() END, ?, ?)")) {
                    bind(ps, id, owner, command, timeoutMs, maxOutputBytes, status, attempt, maxAttempts,
                            running ? leaseHolder : null, (long) attempt, (long) attempt, (long) attempt,
                            enqueuedAgo.toMillis(), attempt > 0, terminal, exitCode, errorCode);
                    ps.executeUpdate();
                }
                if (running) {
                    try (PreparedStatement ps = c.prepareStatement("INSERT INTO leases (execution_id, epoch, owner, expires_at)"
                            + " VALUES (?, ?, ?, now() + ? * interval '1 millisecond')")) {
                        bind(ps, id, (long) attempt, leaseHolder, leaseExpiresIn.toMillis());
                        ps.executeUpdate();
                    }
                }
                c.commit();
            }
            return id;
        }
    }
}
