import io.outrun.core.store.DatabaseConfig;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;

/** What every benchmark shares: the result row, the bench's PostgreSQL, statistics and waiting. */
final class Support {

    /**
     * JobRunr's storage as a plain JobRunr user has it, for the baselines: its servers take the
     * enqueued jobs. (Outrun's own, {@code io.outrun.core.books.JobRunrStorage}, hands its servers
     * no work: Outrun's nodes claim executions themselves.)
     */
    static org.jobrunr.storage.StorageProvider plainJobRunrStorage(javax.sql.DataSource pool,
                                                                   org.jobrunr.utils.mapper.JsonMapper mapper) {
        var storage = new org.jobrunr.storage.sql.postgres.PostgresStorageProvider(pool);
        storage.setJobMapper(new org.jobrunr.jobs.mappers.JobMapper(mapper));
        return storage;
    }
    private Support() {
    }

    /**
     * One figure. {@code baseline} and {@code ratio} may be null (no baseline applies); {@code met}
     * is null where there is no goal to meet.
     */
    record Result(String name, double value, String unit, Double baseline, Double ratio, String goal, Boolean met,
                  String note) {
        static Result of(String name, double value, String unit, Double baseline, String goal, Boolean met, String note) {
            Double ratio = baseline == null || baseline == 0 ? null : value / baseline;
            return new Result(name, value, unit, baseline, ratio, goal, met, note);
        }

        static Result notMeasured(String name, String unit, String goal, String why) {
            return new Result(name, Double.NaN, unit, null, null, goal, null, "not measured: " + why);
        }
    }

    /** The bench's own PostgreSQL (embedded, loopback) with one fresh database per benchmark. */
    static final class Pg implements AutoCloseable {
        private final EmbeddedPostgres server;

        private final boolean durable;

        /**
         * @param durable true: fsync, synchronous_commit and full_page_writes on, as a deployment
         *                runs (the default); false ({@code --fast-db}): all three off, as zonky's
         *                embedded server comes, which flatters every figure that commits
         */
        Pg(boolean durable) throws IOException {
            this.durable = durable;
            String on = durable ? "on" : "off";
            this.server = EmbeddedPostgres.builder()
                    .setServerConfig("max_connections", "300")
                    .setServerConfig("fsync", on)
                    .setServerConfig("synchronous_commit", on)
                    .setServerConfig("full_page_writes", on)
                    .start();
        }

        boolean durable() {
            return durable;
        }

        /** The current WAL position in bytes (pg_current_wal_lsn), for WAL per execution. */
        long walBytes() {
            try (Connection c = server.getPostgresDatabase().getConnection(); Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")) {
                rs.next();
                return rs.getLong(1);
            } catch (SQLException e) {
                throw new IllegalStateException("cannot read pg_current_wal_lsn", e);
            }
        }

        DatabaseConfig fresh(String name) {
            try (Connection c = server.getPostgresDatabase().getConnection(); Statement st = c.createStatement()) {
                st.execute("DROP DATABASE IF EXISTS " + name);
                st.execute("CREATE DATABASE " + name);
            } catch (SQLException e) {
                throw new IllegalStateException("cannot create database " + name, e);
            }
            return new DatabaseConfig(server.getJdbcUrl("postgres", name), "postgres", "");
        }

        /** Settings that matter for the figures, for the notes. */
        String settings() {
            try (Connection c = server.getPostgresDatabase().getConnection(); Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT current_setting('server_version'), current_setting('fsync'),"
                         + " current_setting('synchronous_commit'), current_setting('full_page_writes')")) {
                rs.next();
                return "PostgreSQL " + rs.getString(1) + " (embedded, " + (durable ? "durable" : "FAST, NOT DURABLE: --fast-db")
                        + "), " + flags(rs.getString(2), rs.getString(3), rs.getString(4));
            } catch (SQLException e) {
                return "PostgreSQL (embedded)";
            }
        }

        /** The durability flags as results.json's {@code database} note has them. */
        String flags() {
            try (Connection c = server.getPostgresDatabase().getConnection(); Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT current_setting('fsync'), current_setting('synchronous_commit'),"
                         + " current_setting('full_page_writes')")) {
                rs.next();
                return flags(rs.getString(1), rs.getString(2), rs.getString(3));
            } catch (SQLException e) {
                throw new IllegalStateException("cannot read the database's settings", e);
            }
        }

        private static String flags(String fsync, String synchronousCommit, String fullPageWrites) {
            return "fsync=" + fsync + " synchronous_commit=" + synchronousCommit + " full_page_writes=" + fullPageWrites;
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }

    static Connection connect(DatabaseConfig db) throws SQLException {
        return DriverManager.getConnection(db.url(), db.user(), db.password());
    }

    static double percentile(List<? extends Number> values, double p) {
        List<Double> sorted = new ArrayList<>();
        values.forEach(v -> sorted.add(v.doubleValue()));
        Collections.sort(sorted);
        if (sorted.isEmpty()) {
            return Double.NaN;
        }
        int index = (int) Math.ceil(p * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, index)));
    }

    /**
     * CPU used between {@link #start} and {@link #perExecution}: the whole machine's busy time
     * (/proc/stat: all but idle and iowait), and its split: this JVM's own threads, its child
     * processes that ended (bash, setsid: the JDK waits for each), every PostgreSQL process (live
     * ones, and the ended backends the postmaster reaped). Clock ticks of /proc, 10 ms each.
     */
    record CpuMeter(long[] atStart) {

        static CpuMeter start() {
            return new CpuMeter(readMs());
        }

        /** ms per execution: [0] the machine, [1] this JVM, [2] its children, [3] PostgreSQL. */
        double[] perExecution(int executions) {
            long[] end = readMs();
            double[] per = new double[4];
            for (int i = 0; i < 4; i++) {
                per[i] = (end[i] - atStart[i]) / (double) executions;
            }
            return per;
        }

        private static long[] readMs() {
            long[] ms = new long[4];
            try {
                String[] f = java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/stat")).get(0).trim().split("\\s+");
                for (int i = 1; i < f.length && i <= 8; i++) {
                    if (i != 4 && i != 5) { // idle, iowait
                        ms[0] += Long.parseLong(f[i]) * 10;
                    }
                }
                long[] self = statTicks(java.nio.file.Path.of("/proc/self/stat"));
                ms[1] = (self[0] + self[1]) * 10;
                ms[2] = (self[2] + self[3]) * 10;
                try (var procs = java.nio.file.Files.newDirectoryStream(java.nio.file.Path.of("/proc"), "[0-9]*")) {
                    for (java.nio.file.Path proc : procs) {
                        long[] t = statTicks(proc.resolve("stat"));
                        if (t != null && t[4] == 1) {
                            ms[3] += (t[0] + t[1] + t[2] + t[3]) * 10;
                        }
                    }
                }
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            return ms;
        }
    }

    /** utime, stime, cutime, cstime, and 1 if the process is a postgres (null: gone). */
    private static long[] statTicks(java.nio.file.Path stat) {
        try {
            String text = java.nio.file.Files.readString(stat);
            String comm = text.substring(text.indexOf('(') + 1, text.lastIndexOf(')'));
            String[] f = text.substring(text.lastIndexOf(')') + 2).split(" ");
            // f[0] is field 3; utime is field 14.
            return new long[] {Long.parseLong(f[11]), Long.parseLong(f[12]), Long.parseLong(f[13]), Long.parseLong(f[14]),
                    comm.equals("postgres") ? 1 : 0};
        } catch (java.io.IOException | RuntimeException e) {
            return null;
        }
    }

    static double median(List<? extends Number> values) {
        return percentile(values, 0.5);
    }

    /** Microseconds since the epoch from bash's {@code $EPOCHREALTIME} ("1700000000.123456"). */
    static long epochMicros(String epochRealtime) {
        String s = epochRealtime.strip();
        int dot = s.indexOf('.');
        if (dot < 0) {
            dot = s.indexOf(',');
        }
        return Long.parseLong(s.substring(0, dot)) * 1_000_000L + Long.parseLong(s.substring(dot + 1));
    }

    static long micros(Instant t) {
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000;
    }

    static <T> T await(String what, Duration within, long everyMs, Callable<T> probe) throws Exception {
        long deadline = System.nanoTime() + within.toNanos();
        while (true) {
            T value = probe.call();
            if (value != null && !Boolean.FALSE.equals(value)) {
                return value;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out after " + within.toSeconds() + " s waiting for " + what);
            }
            Thread.sleep(everyMs);
        }
    }

    static void log(String format, Object... args) {
        System.err.printf("[bench %tT] %s%n", Instant.now().toEpochMilli(), String.format(format, args));
        System.err.flush();
    }
}
