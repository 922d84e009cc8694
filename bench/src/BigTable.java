import io.outrun.worker.lease.LeaseStore;
import io.outrun.core.store.RedriveStore;
import io.outrun.core.store.SqlText;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A big executions table (M rows, one INSERT ... SELECT generate_series; see
 * {@link FleetSql#GENERATE}) and the queries that must stay cheap on it, timed with EXPLAIN
 * (ANALYZE, BUFFERS), best of three (warm cache, as a sweep that runs every few seconds sees it).
 * Runs with no worker up, so nothing dispatches the generated backlog.
 */
final class BigTable {

    static final String BIG_OWNER = "owner-big";
    private static final int RUNS = 3;

    /** One query's timing: best execution time of {@link #RUNS}, its buffers and plan. */
    record Timed(double ms, double planningMs, String buffers, String plan) {
    }

    static Map<String, Object> run(Connection db, long rows, FleetNodes nodes, String bigOwnerToken, FleetProbe probe)
            throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        Support.log("big table: generating %,d rows", rows);
        long t0 = System.nanoTime();
        try (PreparedStatement ps = db.prepareStatement(FleetSql.GENERATE)) {
            ps.setLong(1, rows);
            ps.executeUpdate();
        }
        int jobs;
        try (Statement st = db.createStatement()) {
            jobs = st.executeUpdate(FleetSql.GENERATE_JOBS);
            st.executeUpdate(FleetSql.GENERATE_LEASES);
        }
        double generateSeconds = (System.nanoTime() - t0) / 1e9;
        // As autovacuum would have left it (the server runs without it): statistics and the visibility map.
        long v0 = System.nanoTime();
        try (Statement st = db.createStatement()) {
            st.execute("VACUUM (ANALYZE) executions");
            st.execute("VACUUM (ANALYZE) jobrunr_jobs");
        }
        double vacuumSeconds = (System.nanoTime() - v0) / 1e9;
        Map<String, Long> mix = new LinkedHashMap<>();
        try (Statement st = db.createStatement(); ResultSet rs = st.executeQuery(FleetSql.STATUS_MIX)) {
            while (rs.next()) {
                mix.put(rs.getString(1), rs.getLong(2));
            }
        }
        long bigOwnerRows;
        try (PreparedStatement ps = db.prepareStatement("SELECT count(*) FROM executions WHERE owner = ?")) {
            ps.setString(1, BIG_OWNER);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                bigOwnerRows = rs.getLong(1);
            }
        }
        Support.log("big table: %,d rows in %.0f s (%s; %,d live jobs for the queued; %,d rows of %s)", rows, generateSeconds,
                mix, jobs, bigOwnerRows, BIG_OWNER);
        out.put("rows", rows);
        out.put("generate_s", generateSeconds);
        out.put("vacuum_s", vacuumSeconds);
        out.put("status_mix", mix);
        out.put("big_owner_rows", bigOwnerRows);

        try (Statement st = db.createStatement()) {
            st.executeUpdate(FleetSql.STEADY_WATERMARK);
        }
        // The claim and the dashboard watch, as the nodes send them (LeaseStore, RedriveStore).
        Timed claim = explain(db, LeaseStore.claimStatement(), true, Map.of("only_id", NULL_UUID, "default_max_running",
                NULL_INT, "slots", 4, "holder", "bench/claim", "ttl_ms", 30_000L));
        Timed watch = explain(db, RedriveStore.dashboardWatchStatement(), false, Map.of("limit", 500));
        Timed running = explain(db, FleetSql.LISTING, false, BIG_OWNER, "running", 21);
        Timed failed = explain(db, FleetSql.LISTING, false, BIG_OWNER, "failed", 21);
        Timed none = explain(db, FleetSql.LISTING, false, BIG_OWNER, "cancelled", 21);
        out.put("claim", claim);
        out.put("dashboard_watch", watch);
        out.put("listing_running", running);
        out.put("listing_failed", failed);
        out.put("listing_cancelled_none", none);
        out.put("listing_http_ms", httpListing(nodes, bigOwnerToken));
        // The copy in FleetSql must be what the API node just ran.
        List<String> stale = new ArrayList<>();
        if (!probe.nodesRan(FleetSql.LISTING)) {
            stale.add("FleetSql.LISTING differs from what the API node ran: copy it again from ExecutionListing.page");
        }
        stale.forEach(w -> Support.log("WARNING: %s", w));
        out.put("sql_warnings", stale);
        Support.log("big table: claim %.1f ms (%s), dashboard watch %.1f ms (%s), listing running %.1f ms (%s), failed %.1f ms, cancelled (none)"
                        + " %.1f ms (%s), HTTP %s ms", claim.ms(), claim.buffers(), watch.ms(), watch.buffers(), running.ms(), running.buffers(), failed.ms(),
                none.ms(), none.buffers(), out.get("listing_http_ms"));
        return out;
    }

    /** A typed SQL NULL for a parameter the nodes bind as null. */
    private static final Object NULL_UUID = new Object();
    private static final Object NULL_INT = new Object();

    /** As {@link #explain(Connection, String, boolean, Object...)}, for a store's statement and its parameters by name. */
    static Timed explain(Connection db, SqlText sql, boolean rollback, Map<String, Object> byName) throws SQLException {
        Object[] params = new Object[sql.names().size()];
        for (int i = 0; i < params.length; i++) {
            if (!byName.containsKey(sql.names().get(i))) {
                throw new IllegalArgumentException("no value for :" + sql.names().get(i));
            }
            params[i] = byName.get(sql.names().get(i));
        }
        return explain(db, sql.jdbc(), rollback, params);
    }

    /** EXPLAIN (ANALYZE, BUFFERS) {@code sql} {@link #RUNS} times; an UPDATE runs in a rolled-back transaction. */
    static Timed explain(Connection db, String sql, boolean rollback, Object... params) throws SQLException {
        Timed best = null;
        Pattern exec = Pattern.compile("Execution Time: ([0-9.]+) ms");
        Pattern plan = Pattern.compile("Planning Time: ([0-9.]+) ms");
        Pattern buffers = Pattern.compile("Buffers: ([^\\n]+)");
        for (int i = 0; i < RUNS; i++) {
            if (rollback) {
                db.setAutoCommit(false);
            }
            StringBuilder text = new StringBuilder();
            try (PreparedStatement ps = db.prepareStatement("EXPLAIN (ANALYZE, BUFFERS) " + sql)) {
                for (int p = 0; p < params.length; p++) {
                    if (params[p] == NULL_UUID) {
                        ps.setNull(p + 1, java.sql.Types.OTHER);
                    } else if (params[p] == NULL_INT) {
                        ps.setNull(p + 1, java.sql.Types.INTEGER);
                    } else {
                        ps.setObject(p + 1, params[p]);
                    }
                }
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        text.append(rs.getString(1)).append('\n');
                    }
                }
            } finally {
                if (rollback) {
                    db.rollback();
                    db.setAutoCommit(true);
                }
            }
            Matcher e = exec.matcher(text);
            Matcher p = plan.matcher(text);
            Matcher b = buffers.matcher(text);
            double ms = e.find() ? Double.parseDouble(e.group(1)) : Double.NaN;
            Timed t = new Timed(ms, p.find() ? Double.parseDouble(p.group(1)) : Double.NaN, b.find() ? b.group(1) : "", text.toString());
            if (best == null || t.ms() < best.ms()) {
                best = t;
            }
        }
        return best;
    }

    /** GET /v1/executions?status=running&limit=20 of the big owner through the API node: best of three, ms. */
    static double httpListing(FleetNodes nodes, String token) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        List<Double> times = new ArrayList<>();
        for (int i = 0; i < RUNS; i++) {
            long t0 = System.nanoTime();
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(nodes.api("/v1/executions?status=running&limit=20"))
                    .timeout(Duration.ofMinutes(2)).header("Authorization", "Bearer " + token).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            times.add((System.nanoTime() - t0) / 1e6);
            if (r.statusCode() != 200) {
                throw new IllegalStateException("listing answered " + r.statusCode() + ": " + r.body());
            }
        }
        return Support.percentile(times, 0.0);
    }
}
