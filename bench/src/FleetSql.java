import java.util.Locale;

/**
 * Every SQL text the fleet harness runs or looks for, in one place: when the store's SQL or the
 * schema changes (migration V3 and later), this is the only file to edit. The harness never reads
 * executions' output columns (output byte counts come from the API), so moving output elsewhere
 * changes nothing here.
 */
final class FleetSql {
    private FleetSql() {
    }

    // ---- What the harness counts, read as the superuser, filtered to the nodes' role ----

    /** The nodes' cumulative statement counters; toplevel only (pg_stat_statements.track = top). */
    static final String STATEMENTS = "SELECT s.queryid::text || ':' || s.toplevel, s.query, s.calls, s.rows, s.wal_bytes, s.total_exec_time"
            + " FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid WHERE r.rolname = ?";

    static final String WAL_LSN = "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn";

    /** The nodes' connections by application_name (nodes set ApplicationName outrun-NAME). */
    static final String CONNECTIONS = "SELECT coalesce(application_name, ''), count(*) FROM pg_stat_activity"
            + " WHERE usename = ? GROUP BY 1 ORDER BY 1";

    static final String ENDED_COUNT = "SELECT count(*) FROM executions WHERE id = ANY (?)"
            + " AND status IN ('succeeded', 'failed', 'timed_out', 'cancelled')";

    static final String RUNNING_COUNT = "SELECT count(*) FROM executions WHERE id = ANY (?) AND status = 'running'";

    // ---- How a pg_stat_statements entry is classified (matched on its normalized text) ----

    /**
     * JobRunr's onboarding: {@code select jobAsJson from jobrunr_jobs where state = ? ... FOR UPDATE
     * SKIP LOCKED}. (Our lost-dispatch UPDATE also names jobrunr_jobs and SKIP LOCKED: not this.)
     */
    static boolean isOnboarding(String query) {
        String q = query.strip().toLowerCase(Locale.ROOT);
        return q.startsWith("select jobasjson from jobrunr_jobs") && q.contains("for update skip locked");
    }

    /** Any statement on JobRunr's own tables: its writes are reported apart from ours. */
    static boolean isJobRunr(String query) {
        return query.toLowerCase(Locale.ROOT).contains("jobrunr_");
    }

    /**
     * A statement of the fleet's re-drive sweep: since V3 one node holds the sweep (taken in its
     * heartbeat) and runs, once per interval, the expired-lease re-drive and the lost-dispatch
     * check (and its watermark update). Before V3: the advisory-lock try of every node.
     */
    static boolean isSweepTry(String query) {
        String q = query.toLowerCase(Locale.ROOT);
        return q.contains("pg_try_advisory_lock") || q.contains("select watermark from fleet_tasks")
                || q.contains("update fleet_tasks set watermark") || q.contains("from leases where expires_at < now() -");
    }

    // ---- The big table (BigTable) ----

    /**
     * M rows with many owners (30% to one big owner, the rest over 1,000) and a realistic mix:
     * 0.5% queued, 0.01% running (live leases), the rest terminal; the big owner has no cancelled
     * execution, so its listing of them must find that out without reading its 30%. Only the columns without a
     * default, plus finished_at for terminal rows and the lease for running ones; the CHECK
     * constraints hold, and the transition trigger fires only on UPDATE. Parameter: M.
     */
    static final String GENERATE = "INSERT INTO executions (id, owner, command, timeout_ms, max_output_bytes, status,"
            + " finished_at, lease_owner, enqueued_at)"
            + " SELECT gen_random_uuid(), CASE WHEN r1 < 0.3 THEN '" + BigTable.BIG_OWNER + "'"
            + "   ELSE 'owner-' || (r1 * 1000)::int END, 'make test', 600000, 1048576, st,"
            + " CASE WHEN st IN ('queued', 'running') THEN NULL ELSE now() - r2 * interval '30 days' END,"
            + " CASE WHEN st = 'running' THEN 'node-' || (r1 * 50)::int END,"
            // A backlog waits since long before the last sweep: only new rows are ever looked at.
            + " now() - interval '1 hour' - r2 * interval '1 day'"
            + " FROM (SELECT r1, r2, CASE WHEN r2 < 0.005 THEN 'queued' WHEN r2 < 0.0051 THEN 'running'"
            + "   WHEN r2 < 0.06 THEN 'failed' WHEN r2 < 0.08 THEN 'timed_out' WHEN r2 < 0.09 AND r1 >= 0.3 THEN 'cancelled'"
            + "   ELSE 'succeeded' END AS st"
            + "   FROM (SELECT random() AS r1, random() AS r2 FROM generate_series(1, ?)) g) s";

    /**
     * A live JobRunr job for every generated queued row, as a healthy backlog has: lost-dispatch
     * detection must then look at every queued row and find nothing, its worst case. The job id
     * is what the store derives for the current book (executions.job_id).
     */
    static final String GENERATE_JOBS = "INSERT INTO jobrunr_jobs (id, version, jobAsJson, jobSignature, state,"
            + " createdAt, updatedAt, scheduledAt)"
            + " SELECT job_id::text, 1, '{}', 'bench.Generated', 'ENQUEUED', now(), now(), NULL"
            + " FROM executions WHERE status = 'queued' AND owner LIKE 'owner-%'";

    /** The running rows' live leases (V3: a narrow table of its own). */
    static final String GENERATE_LEASES = "INSERT INTO leases (execution_id, epoch, owner, expires_at)"
            + " SELECT id, 1, lease_owner, now() + interval '1 hour' FROM executions WHERE status = 'running'";

    /** As the fleet's sweep leaves it: it looked a moment ago. */
    static final String STEADY_WATERMARK = "UPDATE fleet_tasks SET watermark = now() - interval '2 seconds' WHERE name = 'sweep'";

    static final String STATUS_MIX = "SELECT status, count(*) FROM executions GROUP BY 1 ORDER BY 2 DESC";

    /**
     * An owner's listing with a status filter, first page, as ExecutionListing.page builds it
     * (copy it from there when it changes). Parameters: owner, status, limit + 1.
     */
    static final String LISTING = "SELECT id, status, left(command, 200), exit_code, attempt, created_at,"
            + " started_at, finished_at, labels::text,"
            + " (extract(epoch from (coalesce(finished_at, now()) - started_at)) * 1000)::bigint"
            + " FROM executions WHERE owner = ? AND status = ? ORDER BY created_at DESC, id DESC LIMIT ?";
}
