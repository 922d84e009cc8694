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
 * The {@code schedules} table. Recurring schedules (issue 28, V21): an owner's named, checked submission, and how its firings
 * went. The timing is JobRunr's (a recurring job per schedule); this store holds what a firing
 * needs, and finds the firing jobs JobRunr has enqueued for Outrun to turn into executions.
 */
public final class ScheduleStore {

    /** Most schedules one owner keeps. */
    public static final int MAX_PER_OWNER = 100;

    /** A schedule as stored. {@code cron} or {@code everyMs} is set, never both. */
    public record Row(String owner, String name, String recurringJobId, String cron, Long everyMs, String zone,
                      String overlap, String submissionJson, Instant createdAt, Instant lastFiredAt,
                      UUID lastExecutionId, long fired, long skipped) {
    }

    /** Under the owner's lock, so that concurrent creates cannot pass the cap. */
    private static final NamedSql INSERT = NamedSql.of("""
            WITH lock AS (SELECT pg_advisory_xact_lock(hashtextextended('outrun-schedules:' || :owner, 0)))
            INSERT INTO schedules (owner, name, recurring_job_id, cron, every_ms, zone, overlap, submission)
            SELECT :owner, :name, :rid, :cron, :every_ms, :zone, :overlap, :submission::jsonb FROM lock
            WHERE (SELECT count(*) FROM schedules WHERE owner = :owner) < :max
            ON CONFLICT (owner, name) DO NOTHING
            RETURNING owner, name, recurring_job_id, cron, every_ms, zone, overlap, submission::text AS submission_json, created_at,
              last_fired_at, last_execution_id, fired, skipped""");

    /** A listing shows the command only: the submission itself (its files) is not read. */
    private static final NamedSql LIST = NamedSql.of("""
            SELECT owner, name, recurring_job_id, cron, every_ms, zone, overlap, jsonb_build_object('command', submission->'command')::text AS submission_json, created_at,
              last_fired_at, last_execution_id, fired, skipped FROM schedules WHERE owner = :owner ORDER BY name""");
    private static final NamedSql GET = NamedSql.of("""
            SELECT owner, name, recurring_job_id, cron, every_ms, zone, overlap, submission::text AS submission_json, created_at,
              last_fired_at, last_execution_id, fired, skipped FROM schedules WHERE owner = :owner AND name = :name""");
    private static final NamedSql BY_JOB = NamedSql.of("""
            SELECT owner, name, recurring_job_id, cron, every_ms, zone, overlap, submission::text AS submission_json, created_at,
              last_fired_at, last_execution_id, fired, skipped FROM schedules WHERE recurring_job_id = :rid""");
    private static final NamedSql DELETE = NamedSql.of("""
            DELETE FROM schedules WHERE owner = :owner AND name = :name RETURNING recurring_job_id""");

    /**
     * The firing jobs JobRunr has enqueued for Outrun's schedules (another application's recurring
     * jobs on this database are not Outrun's to end), oldest first, by a partial index of
     * {@code jobrunr_jobs} made with JobRunr's tables ({@code core.books.JobRunrStorage}).
     */
    private static final NamedSql ENQUEUED_FIRINGS = NamedSql.of("""
            SELECT id, recurringjobid FROM jobrunr_jobs WHERE state = 'ENQUEUED' AND recurringjobid LIKE 'outrun-schedule-%'
            ORDER BY createdat LIMIT :n""");

    private static final NamedSql FIRED = NamedSql.of("""
            UPDATE schedules SET last_fired_at = now(), last_execution_id = :execution_id, fired = fired + 1
            WHERE recurring_job_id = :rid""");

    private static final NamedSql SKIPPED = NamedSql.of("""
            UPDATE schedules SET last_fired_at = now(), skipped = skipped + 1 WHERE recurring_job_id = :rid""");

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
                .and("max", MAX_PER_OWNER);
        return one(INSERT, args);
    }

    public List<Row> list(String owner) {
        return many(LIST, NamedSql.Args.of("owner", owner));
    }

    public Optional<Row> get(String owner, String name) {
        return one(GET, NamedSql.Args.of("owner", owner, "name", name));
    }

    public Optional<Row> byRecurringJob(String recurringJobId) {
        return one(BY_JOB, NamedSql.Args.of("rid", recurringJobId));
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

    public void fired(String recurringJobId, UUID executionId) {
        ExecutionRows.update(dataSource, FIRED, NamedSql.Args.of("rid", recurringJobId, "execution_id", executionId));
    }

    public void skipped(String recurringJobId) {
        ExecutionRows.update(dataSource, SKIPPED, NamedSql.Args.of("rid", recurringJobId));
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
                        rs.getLong("fired"), rs.getLong("skipped")));
            }
            return out;
        } catch (SQLException e) {
            throw new StoreException("cannot read schedules: " + sql.firstWords(), e);
        }
    }
}
