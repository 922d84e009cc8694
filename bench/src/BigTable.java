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

    static Map<String, Object> run(Connection db, long rows, FleetNodes nodes, String bigOwnerToken, FleetProbe probe,
                                   boolean workersRan) throws Exception {
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
        Timed lost = explain(db, FleetSql.LOST_DISPATCH, true, 0L, 0L, 500);
        Timed running = explain(db, FleetSql.LISTING, false, BIG_OWNER, "running", 21);
        Timed failed = explain(db, FleetSql.LISTING, false, BIG_OWNER, "failed", 21);
        Timed none = explain(db, FleetSql.LISTING, false, BIG_OWNER, "cancelled", 21);
        out.put("lost_dispatch", lost);
        out.put("listing_running", running);
        out.put("listing_failed", failed);
        out.put("listing_cancelled_none", none);
        out.put("listing_http_ms", httpListing(nodes, bigOwnerToken));
        // The copies in FleetSql must be what the nodes run: the sweep ran lost-dispatch detection
        // all along, and the API node just ran the listing.
        List<String> stale = new ArrayList<>();
        if (workersRan && !probe.nodesRan(FleetSql.LOST_DISPATCH)) {
            stale.add("FleetSql.LOST_DISPATCH differs from what the nodes ran: copy it again from RedriveStore.redispatchLost");
        }
        if (!probe.nodesRan(FleetSql.LISTING)) {
            stale.add("FleetSql.LISTING differs from what the API node ran: copy it again from ExecutionListing.page");
        }
        stale.forEach(w -> Support.log("WARNING: %s", w));
        out.put("sql_warnings", stale);
        Support.log("big table: lost-dispatch %.1f ms (%s), listing running %.1f ms (%s), failed %.1f ms, cancelled (none)"
                        + " %.1f ms (%s), HTTP %s ms", lost.ms(), lost.buffers(), running.ms(), running.buffers(), failed.ms(),
                none.ms(), none.buffers(), out.get("listing_http_ms"));
        return out;
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
                    ps.setObject(p + 1, params[p]);
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
