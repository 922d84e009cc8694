package io.outrun.core.store;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The {@code schedules} table. Recurring schedules (issue 28, V21): an owner's named, checked
 * submission, and how its firings went. Since issue 45 (V25) the time is kept here too: when the
 * fleet's clock must next look at a schedule ({@code next_fire_at}) and up to when its firings
 * were handled ({@code fired_through}); {@link #due} and {@link #advance} are the clock's two
 * statements. JobRunr's firing jobs of an older version are found by {@link #enqueuedFirings}.
 */
public final class ScheduleStore {

    /** Most schedules one owner keeps. */
    public static final int MAX_PER_OWNER = 100;

    /** A schedule as stored. {@code cron} or {@code everyMs} is set, never both. */
    public record Row(String owner, String name, String recurringJobId, String cron, Long everyMs, String zone,
                      String overlap, String submissionJson, Instant createdAt, Instant lastFiredAt,
                      UUID lastExecutionId, long fired, long skipped, String catchUp, long catchUpWindowMs,
                      boolean paused, Instant nextFireAt) {
    }


    /** Under the owner's lock, so that concurrent creates cannot pass the cap. */
    private static final NamedSql INSERT = NamedSql.of("""
            WITH lock AS (SELECT pg_advisory_xact_lock(hashtextextended('outrun-schedules:' || :owner, 0)))
            INSERT INTO schedules (owner, name, recurring_job_id, cron, every_ms, zone, overlap, submission, catch_up,
              catch_up_window_ms)
            SELECT :owner, :name, :rid, :cron, :every_ms, :zone, :overlap, :submission::jsonb, :catch_up, :window FROM lock
            WHERE (SELECT count(*) FROM schedules WHERE owner = :owner) < :max
            ON CONFLICT (owner, name) DO NOTHING
            RETURNING owner, name, recurring_job_id, cron, every_ms, zone, overlap, submission::text AS submission_json, created_at,
              last_fired_at, last_execution_id, fired, skipped, catch_up, catch_up_window_ms, paused, next_fire_at""");

    /** A listing shows the command only: the submission itself (its files) is not read. */
    private static final NamedSql LIST = NamedSql.of("""
            SELECT owner, name, recurring_job_id, cron, every_ms, zone, overlap,
              jsonb_build_object('command', submission->'command')::text AS submission_json, created_at,
              last_fired_at, last_execution_id, fired, skipped, catch_up, catch_up_window_ms, paused, next_fire_at
            FROM schedules WHERE owner = :owner ORDER BY name""");
    private static final NamedSql GET = NamedSql.of("""
            SELECT owner, name, recurring_job_id, cron, every_ms, zone, overlap, submission::text AS submission_json, created_at,
              last_fired_at, last_execution_id, fired, skipped, catch_up, catch_up_window_ms, paused, next_fire_at
            FROM schedules WHERE owner = :owner AND name = :name""");

    /**
     * Paused: the clock passes it over. Resumed: it fires from now on, not what fell due while it
     * was paused (its catch-up policy is for firings no worker was there to make).
     */
    private static final NamedSql PAUSE = NamedSql.of("""
            UPDATE schedules SET paused = :paused,
              next_fire_at = CASE WHEN :paused THEN next_fire_at ELSE now() END,
              fired_through = CASE WHEN :paused OR NOT paused THEN fired_through ELSE now() END
            WHERE owner = :owner AND name = :name
            RETURNING owner, name, recurring_job_id, cron, every_ms, zone, overlap, submission::text AS submission_json, created_at,
              last_fired_at, last_execution_id, fired, skipped, catch_up, catch_up_window_ms, paused, next_fire_at""");

    /**
     * The clock's look: due schedules not paused, soonest first, locked until the pass that fires
     * them commits (another node's pass skips them; a delete waits for it), with the state of
     * each one's last execution (overlap skip) and the database's time, which all firing times
     * are reckoned in.
     */
    private static final NamedSql DUE = NamedSql.of("""
            SELECT s.owner, s.name, s.recurring_job_id, s.cron, s.every_ms, s.zone, s.overlap, s.catch_up,
              s.catch_up_window_ms, s.submission::text AS submission_json, s.created_at, s.fired_through,
              s.last_execution_id, e.status AS last_status, now() AS db_now
            FROM schedules s LEFT JOIN executions e ON e.id = s.last_execution_id
            WHERE NOT s.paused AND s.next_fire_at <= now()
            ORDER BY s.next_fire_at LIMIT :n
            FOR UPDATE OF s SKIP LOCKED""");

    /** How long until the soonest schedule not paused is due (ms; 0 or less: due now); null when there is none. */
    private static final NamedSql SOONEST = NamedSql.of("""
            SELECT (extract(epoch FROM min(next_fire_at) - now()) * 1000)::bigint FROM schedules WHERE NOT paused""");

    private static final NamedSql BOUND_PASS = NamedSql.of("""
            SET LOCAL idle_in_transaction_session_timeout = '60s'""");

    /** The clock's write: every schedule of a pass moved forward, in one statement. */
    private static final NamedSql ADVANCE = NamedSql.of("""
            UPDATE schedules s SET next_fire_at = timestamptz 'epoch' + u.next_us * interval '1 microsecond',
              fired_through = timestamptz 'epoch' + u.through_us * interval '1 microsecond',
              last_fired_at = CASE WHEN u.fired + u.skipped > 0 THEN now() ELSE s.last_fired_at END,
              last_execution_id = COALESCE(u.last_execution_id, s.last_execution_id),
              fired = s.fired + u.fired, skipped = s.skipped + u.skipped
            FROM unnest(:owners, :names, :next_us, :through_us, :last_ids, :fired, :skipped)
              AS u(owner, name, next_us, through_us, last_execution_id, fired, skipped)
            WHERE s.owner = u.owner AND s.name = u.name""");
    private static final NamedSql DELETE = NamedSql.of("""
            DELETE FROM schedules WHERE owner = :owner AND name = :name RETURNING recurring_job_id""");

    /**
     * The firing jobs JobRunr enqueued for Outrun's schedules before Outrun kept their time (an
     * older version's, left when it was upgraded: see {@code worker.schedule.ScheduleClock}); another
     * application's recurring jobs on this database are not Outrun's to end. Oldest first, by a
     * partial index of {@code jobrunr_jobs} made with JobRunr's tables ({@code core.books.JobRunrStorage}).
     */
    private static final NamedSql ENQUEUED_FIRINGS = NamedSql.of("""
            SELECT id, recurringjobid FROM jobrunr_jobs WHERE state = 'ENQUEUED' AND recurringjobid LIKE 'outrun-schedule-%'
            ORDER BY createdat LIMIT :n""");


    private final DataSource dataSource;

    public ScheduleStore(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** The new row; empty when the name is taken or the owner keeps {@link #MAX_PER_OWNER}. */
    public Optional<Row> insert(Row r) {
        NamedSql.Args args = NamedSql.Args.of("owner", r.owner(), "name", r.name(), "rid", r.recurringJobId())
                .and("cron", r.cron())
                .and("every_ms", r.everyMs())
                .and("zone", r.zone())
                .and("overlap", r.overlap())
                .and("submission", r.submissionJson())
                .and("catch_up", r.catchUp())
                .and("window", r.catchUpWindowMs())
                .and("max", MAX_PER_OWNER);
        return one(INSERT, args);
    }

    public List<Row> list(String owner) {
        return many(LIST, NamedSql.Args.of("owner", owner));
    }

    public Optional<Row> get(String owner, String name) {
        return one(GET, NamedSql.Args.of("owner", owner, "name", name));
    }

    /** The deleted schedule's recurring job id; empty when there was none of that name. */
    public Optional<String> delete(String owner, String name) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = DELETE.prepare(c,
                NamedSql.Args.of("owner", owner, "name", name)); ResultSet rs = ps.executeQuery()) {
            return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
        } catch (SQLException e) {
            throw new StoreException("cannot delete schedule " + name, e);
        }
    }

    /** A firing job JobRunr enqueued: its id and its recurring job's. */
    public record Firing(UUID jobId, String recurringJobId) {
    }

    public List<Firing> enqueuedFirings(int n) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = ENQUEUED_FIRINGS.prepare(c,
                NamedSql.Args.of("n", n)); ResultSet rs = ps.executeQuery()) {
            List<Firing> out = new ArrayList<>();
            while (rs.next()) {
                out.add(new Firing(UUID.fromString(rs.getString(1)), rs.getString(2)));
            }
            return out;
        } catch (SQLException e) {
            throw new StoreException("cannot read enqueued schedule firings", e);
        }
    }

    /** Pauses or resumes; empty when there is no schedule of that name. */
    public Optional<Row> pause(String owner, String name, boolean paused) {
        return one(PAUSE, NamedSql.Args.of("owner", owner, "name", name, "paused", paused));
    }

    /** A due schedule as the clock took it, locked by its pass. */
    public record Due(String owner, String name, String recurringJobId, String cron, Long everyMs, String zone,
                      String overlap, String catchUp, long catchUpWindowMs, String submissionJson, Instant createdAt,
                      Instant firedThrough, UUID lastExecutionId, String lastStatus, Instant now) {
    }

    /** What a pass did to one schedule: where it stands now, and what it fired or skipped. */
    public record Advance(String owner, String name, Instant nextFireAt, Instant firedThrough, UUID lastExecutionId,
                          int fired, int skipped) {
    }

    /** Milliseconds until the soonest schedule is due (0 or less: due now); null when none is waiting. */
    public Long soonestDueInMs() {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = SOONEST.prepare(c, NamedSql.Args.of());
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            long ms = rs.getLong(1);
            return rs.wasNull() ? null : ms;
        } catch (SQLException e) {
            throw new StoreException("cannot read when the next schedule is due", e);
        }
    }

    static long micros(Instant t) {
        return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1_000);
    }

    /**
     * Bounds the clock's transaction on {@code c}: a node frozen or cut off mid-pass must not keep
     * its schedules locked (the next sweeper skips locked rows) until TCP gives up.
     */
    public static void boundPass(Connection c) throws SQLException {
        try (PreparedStatement ps = BOUND_PASS.prepare(c, NamedSql.Args.of())) {
            ps.execute();
        }
    }

    /** Up to {@code n} due schedules, locked on {@code c} until its transaction ends. */
    public static List<Due> due(Connection c, int n) throws SQLException {
        try (PreparedStatement ps = DUE.prepare(c, NamedSql.Args.of("n", n)); ResultSet rs = ps.executeQuery()) {
            List<Due> out = new ArrayList<>();
            while (rs.next()) {
                out.add(new Due(rs.getString("owner"), rs.getString("name"), rs.getString("recurring_job_id"),
                        rs.getString("cron"), (Long) rs.getObject("every_ms"), rs.getString("zone"), rs.getString("overlap"),
                        rs.getString("catch_up"), rs.getLong("catch_up_window_ms"), rs.getString("submission_json"),
                        ExecutionRows.instant(rs, "created_at"), ExecutionRows.instant(rs, "fired_through"),
                        rs.getObject("last_execution_id", UUID.class), rs.getString("last_status"),
                        ExecutionRows.instant(rs, "db_now")));
            }
            return out;
        }
    }

    /** Moves every schedule of a pass forward, on {@code c} (in the pass's transaction). */
    public static void advance(Connection c, List<Advance> moves) throws SQLException {
        if (moves.isEmpty()) {
            return;
        }
        NamedSql.Args args = NamedSql.Args.of("owners", c.createArrayOf("text", moves.stream().map(Advance::owner).toArray()))
                .and("names", c.createArrayOf("text", moves.stream().map(Advance::name).toArray()))
                // To the microsecond, as PostgreSQL keeps them: a firing time cut to the millisecond
                // would fall before itself, and be planned again at the next look.
                .and("next_us", c.createArrayOf("int8", moves.stream().map(m -> micros(m.nextFireAt())).toArray()))
                .and("through_us", c.createArrayOf("int8", moves.stream().map(m -> micros(m.firedThrough())).toArray()))
                .and("last_ids", c.createArrayOf("uuid", moves.stream().map(Advance::lastExecutionId).toArray()))
                .and("fired", c.createArrayOf("int4", moves.stream().map(Advance::fired).toArray()))
                .and("skipped", c.createArrayOf("int4", moves.stream().map(Advance::skipped).toArray()));
        try (PreparedStatement ps = ADVANCE.prepare(c, args)) {
            ps.executeUpdate();
        }
    }

    private Optional<Row> one(NamedSql sql, NamedSql.Args args) {
        List<Row> rows = many(sql, args);
        return rows.isEmpty() ? Optional.empty() : Optional.of(rows.get(0));
    }

    private List<Row> many(NamedSql sql, NamedSql.Args args) {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = sql.prepare(c, args);
             ResultSet rs = ps.executeQuery()) {
            List<Row> out = new ArrayList<>();
            while (rs.next()) {
                out.add(new Row(rs.getString("owner"), rs.getString("name"), rs.getString("recurring_job_id"),
                        rs.getString("cron"), (Long) rs.getObject("every_ms"), rs.getString("zone"), rs.getString("overlap"),
                        rs.getString("submission_json"), ExecutionRows.instant(rs, "created_at"),
                        ExecutionRows.instant(rs, "last_fired_at"), rs.getObject("last_execution_id", UUID.class),
                        rs.getLong("fired"), rs.getLong("skipped"), rs.getString("catch_up"),
                        rs.getLong("catch_up_window_ms"), rs.getBoolean("paused"), ExecutionRows.instant(rs, "next_fire_at")));
            }
            return out;
        } catch (SQLException e) {
            throw new StoreException("cannot read schedules: " + sql.firstWords(), e);
        }
    }
}
