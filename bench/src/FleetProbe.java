import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * What the database has done for the nodes' role, read at one instant: pg_stat_statements
 * counters, the statements in the server's log (pg_stat_statements misses most COMMITs and the
 * pool's keep-alive checks; the log has every one) and the WAL position. Two snapshots make a
 * {@link Delta}. The harness connects as another role, so its own statements count nowhere.
 */
final class FleetProbe {

    record Entry(String query, long calls, long rows, long walBytes, double execMs) {
    }

    record Snapshot(long nanos, long walLsn, long loggedStatements, long onboardingFound, long onboardingEmpty,
                    Map<String, Entry> statements) {
    }

    /** What happened between two snapshots. */
    record Delta(double seconds, long wal, long logged, long calls, long rows, long walBytes,
                 long onboardingCalls, long onboardingRows, long onboardingFound, long onboardingEmpty,
                 long sweepTries, long jobrunrWal, long oursWal, Map<String, Long> topCalls,
                 Map<String, Double> topExecMs) {

        /** The share of onboardings that found no job, from the log (see readLog). */
        double onboardingEmptyShare() {
            long all = onboardingFound + onboardingEmpty;
            return all == 0 ? Double.NaN : (double) onboardingEmpty / all;
        }
    }

    private final Connection db;
    private final String role;
    private final Path serverLog;
    private long logOffset;
    private long logCount;
    private final StringBuilder partial = new StringBuilder();

    FleetProbe(Connection db, String role, Path serverLog) {
        this.db = db;
        this.role = role;
        this.serverLog = serverLog;
    }

    Snapshot snapshot() throws SQLException, IOException {
        Map<String, Entry> statements = new HashMap<>();
        try (PreparedStatement ps = db.prepareStatement(FleetSql.STATEMENTS)) {
            ps.setString(1, role);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    statements.put(rs.getString(1), new Entry(rs.getString(2), rs.getLong(3), rs.getLong(4), rs.getLong(5), rs.getDouble(6)));
                }
            }
        }
        long lsn;
        try (Statement st = db.createStatement(); ResultSet rs = st.executeQuery(FleetSql.WAL_LSN)) {
            rs.next();
            lsn = rs.getLong(1);
        }
        readLog();
        return new Snapshot(System.nanoTime(), lsn, logCount, onboardingFound, onboardingEmpty, statements);
    }

    /**
     * Reads what the log gained since the last call (log_line_prefix '%m|%u|%a|%p|%x| '). Counts
     * the nodes' statements: one entry per simple-protocol statement ("statement: ", Hikari's
     * empty keep-alive query included) and per extended-protocol execute ("execute "). And tells
     * the onboardings that found a job from those that found none: a {@code FOR UPDATE} that
     * locked a row gave its transaction an xid (%x), so the next statement of that backend shows
     * a non-zero xid; an empty one reaches its COMMIT with xid 0.
     */
    private void readLog() throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(serverLog.toFile(), "r")) {
            while (f.length() > logOffset) {
                byte[] bytes = new byte[(int) Math.min(f.length() - logOffset, 64L << 20)];
                f.seek(logOffset);
                f.readFully(bytes);
                logOffset += bytes.length;
                partial.append(new String(bytes, StandardCharsets.UTF_8));
                int start = 0;
                int nl;
                while ((nl = partial.indexOf("\n", start)) >= 0) {
                    String line = partial.substring(start, nl);
                    start = nl + 1;
                    if (ENTRY_START.matcher(line).lookingAt()) {
                        finishEntry();
                        entry.append(line);
                    } else if (entry.length() > 0) {
                        entry.append('\n').append(line);
                    }
                }
                partial.delete(0, start);
            }
        }
        // The last entry may still get continuation lines: it is counted at the next read.
    }

    private static final Pattern ENTRY_START = Pattern.compile("\\d{4}-\\d\\d-\\d\\d ");
    private final StringBuilder entry = new StringBuilder();
    private final Map<String, Boolean> onboardingPending = new HashMap<>();
    private final java.util.Set<String> texts = new java.util.HashSet<>();
    private long onboardingFound;
    private long onboardingEmpty;

    private void finishEntry() {
        if (entry.length() == 0) {
            return;
        }
        String[] f = entry.toString().split("\\|", 6);
        entry.setLength(0);
        if (f.length < 6 || !role.equals(f[1])) {
            return;
        }
        String rest = f[5];
        int at = rest.indexOf("LOG:  statement: ");
        String text;
        if (at >= 0) {
            text = rest.substring(at + "LOG:  statement: ".length());
        } else if ((at = rest.indexOf("LOG:  execute ")) >= 0) {
            int colon = rest.indexOf(": ", at + "LOG:  execute ".length());
            text = colon < 0 ? "" : rest.substring(colon + 2);
        } else {
            return;
        }
        logCount++;
        if (texts.size() < 20_000) {
            texts.add(normalize(text));
        }
        String pid = f[3];
        if (onboardingPending.remove(pid) != null) {
            String t = text.strip().toUpperCase(java.util.Locale.ROOT);
            if (!"0".equals(f[4])) {
                onboardingFound++;
            } else if (t.equals("COMMIT") || t.equals("ROLLBACK")) {
                onboardingEmpty++;
            } else {
                onboardingPending.put(pid, true); // e.g. a fetch of the same cursor: decide later
            }
        }
        if (FleetSql.isOnboarding(text)) {
            onboardingPending.put(pid, true);
        }
    }

    static Delta delta(Snapshot a, Snapshot b) {
        long calls = 0;
        long rows = 0;
        long walBytes = 0;
        long onboardingCalls = 0;
        long onboardingRows = 0;
        long sweep = 0;
        long jobrunrWal = 0;
        Map<String, Long> byQuery = new HashMap<>();
        Map<String, Double> msByQuery = new HashMap<>();
        for (Map.Entry<String, Entry> e : b.statements().entrySet()) {
            Entry after = e.getValue();
            Entry before = a.statements().getOrDefault(e.getKey(), new Entry(after.query(), 0, 0, 0, 0));
            long c = after.calls() - before.calls();
            long r = after.rows() - before.rows();
            long w = after.walBytes() - before.walBytes();
            if (c <= 0 && w <= 0) {
                continue;
            }
            calls += c;
            rows += r;
            walBytes += w;
            if (FleetSql.isOnboarding(after.query())) {
                onboardingCalls += c;
                onboardingRows += r;
            }
            if (FleetSql.isSweepTry(after.query())) {
                sweep += c;
            }
            if (FleetSql.isJobRunr(after.query())) {
                jobrunrWal += w;
            }
            byQuery.merge(after.query().replaceAll("\\s+", " "), c, Long::sum);
            msByQuery.merge(after.query().replaceAll("\\s+", " "), after.execMs() - before.execMs(), Double::sum);
        }
        Map<String, Long> top = new LinkedHashMap<>();
        byQuery.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(12)
                .forEach(e -> top.put(e.getKey().length() > 160 ? e.getKey().substring(0, 160) + "…" : e.getKey(), e.getValue()));
        // Where the database's time goes (pg_stat_statements total_exec_time: time in the
        // executor, a stand-in for the server's CPU on statements that do not wait).
        Map<String, Double> topMs = new LinkedHashMap<>();
        msByQuery.entrySet().stream().sorted(Map.Entry.<String, Double>comparingByValue().reversed()).limit(12)
                .forEach(e -> topMs.put(e.getKey().length() > 160 ? e.getKey().substring(0, 160) + "…" : e.getKey(),
                        Math.round(e.getValue() * 10) / 10.0));
        return new Delta((b.nanos() - a.nanos()) / 1e9, b.walLsn() - a.walLsn(), b.loggedStatements() - a.loggedStatements(),
                calls, rows, walBytes, onboardingCalls, onboardingRows, b.onboardingFound() - a.onboardingFound(),
                b.onboardingEmpty() - a.onboardingEmpty(), sweep, jobrunrWal, walBytes - jobrunrWal, top, topMs);
    }

    /**
     * Whether the nodes ran {@code sql} (up to its RETURNING clause) since the harness started:
     * tells when a copy in {@link FleetSql} no longer matches the store's SQL.
     */
    boolean nodesRan(String sql) throws IOException {
        readLog();
        return texts.contains(normalize(sql));
    }

    private static String normalize(String sql) {
        String s = sql.replaceAll("\\$\\d+", "?").replaceAll("\\s+", " ").strip();
        int returning = s.indexOf(" RETURNING ");
        return returning < 0 ? s : s.substring(0, returning);
    }

    /** The nodes' connections by application_name. */
    Map<String, Integer> connections() throws SQLException {
        Map<String, Integer> byApp = new LinkedHashMap<>();
        try (PreparedStatement ps = db.prepareStatement(FleetSql.CONNECTIONS)) {
            ps.setString(1, role);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    byApp.put(rs.getString(1), rs.getInt(2));
                }
            }
        }
        return byApp;
    }
}
