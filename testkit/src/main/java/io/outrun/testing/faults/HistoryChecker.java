package io.outrun.testing.faults;

import io.outrun.testing.faults.Attempts.Attempt;
import io.outrun.testing.faults.FinalState.Execution;
import io.outrun.testing.faults.FinalState.Stdout;
import io.outrun.testing.faults.Submits.Submit;
import io.outrun.testing.faults.Violation.Kind;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Checks a fault run (issue 43): the client history, the commands' own marks, the webhook
 * receiver's log and the final database, against what Outrun promises under faults. Each rule is
 * one method below and one {@link Kind}; bench/README.md ("Faults: the checker") lists them.
 *
 * <p>What counts as a double run: Outrun executes at least once. A re-drive after a partition may
 * run a command again whose earlier attempt finished but whose end never reached the database;
 * that is allowed and reported as the note {@code reran_after_end}. A violation is what the user
 * can see twice: one key acknowledged as two executions, two executions in the database for one
 * key, or two different terminal outcomes for one execution (webhooks that disagree with each
 * other or with the database). Two attempts alive at once ({@code overlaps}) is a violation of
 * its own: fencing must stop the old attempt before the new one starts.
 *
 * <p>CLI: {@code --dir RUN_DIR --jdbc-url URL --user U --password P [--seed N] [--failover-s X]};
 * writes RUN_DIR/faults.json, prints it, and exits 1 on any violation (2: could not check).
 */
public final class HistoryChecker {

    /**
     * How long after a cancel's acknowledgement the command may still show work: the cancel
     * reaches the holder at its next lease renewal or NOTIFY, then the process group gets SIGTERM
     * and a grace period. 2 s is generous for a healthy fleet; a partitioned holder that cannot
     * hear the cancel is a finding, not noise (it must stop when its lease is lost, well within
     * the lease time, which the run's lease settings keep short).
     */
    static final long CANCEL_KILL_ALLOWANCE_MS = 2_000;

    /** Marks are written by one host clock, so attempts may not overlap by even 1 ms. */
    static final long OVERLAP_TOLERANCE_MS = 0;

    private final RunDirectory run;
    private final FinalState db;
    private final List<Violation> violations = new ArrayList<>();
    private final List<Violation> notes = new ArrayList<>();

    private HistoryChecker(RunDirectory run, FinalState db) {
        this.run = run;
        this.db = db;
    }

    /** Checks a run directory against the database behind {@code c}. */
    public static Verdict check(Path dir, Connection c, Long seed, Double failoverS) throws SQLException {
        RunDirectory run = RunDirectory.read(dir);
        List<Submit> submits = Submits.of(run.history());
        Set<String> countLines = new LinkedHashSet<>();
        submits.stream().filter(s -> s.expectLines() != null).forEach(s -> countLines.addAll(s.acknowledged().keySet()));
        return check(run, FinalState.read(c, countLines), seed, failoverS);
    }

    /** Checks what was read; no I/O. */
    public static Verdict check(RunDirectory run, FinalState db, Long seed, Double failoverS) {
        HistoryChecker checker = new HistoryChecker(run, db);
        List<Submit> submits = Submits.of(run.history());
        checker.acknowledgedOnce(submits);
        checker.notLost(submits);
        checker.oneExecutionPerKey();
        checker.oneOutcomePerExecution();
        checker.webhooksDelivered(submits);
        checker.attemptsApart();
        checker.cancelledStopped();
        checker.firingsOnce();
        checker.outputComplete(submits);
        int indeterminate = (int) submits.stream().filter(Submit::indeterminate).count();
        return new Verdict(Submits.acknowledgedIds(submits).size(), indeterminate, checker.violations, checker.notes,
                run.malformed(), run.nemesis(), seed, failoverS);
    }

    /** duplicated: one (owner, key) acknowledged as two executions. */
    private void acknowledgedOnce(List<Submit> submits) {
        for (Submit s : submits) {
            if (s.acknowledged().size() > 1) {
                String first = s.acknowledged().keySet().iterator().next();
                violation(Kind.DUPLICATED, first, "key " + s.key() + owner(s.owner()) + " acknowledged as two or more"
                        + " executions (id=first ack ms): " + s.acknowledged());
            }
        }
    }

    /** lost: acknowledged, and missing from the database or not terminal when checked. */
    private void notLost(List<Submit> submits) {
        for (Submit s : submits) {
            s.acknowledged().forEach((id, t) -> {
                Execution e = db.executions().get(id);
                if (e == null) {
                    violation(Kind.LOST, id, "acknowledged at " + t + " (key " + s.key() + ") but not in the database");
                } else if (!e.terminal()) {
                    violation(Kind.LOST, id, "acknowledged at " + t + " (key " + s.key() + ") but still " + e.status()
                            + " (attempt " + e.attempt() + ") at check time");
                }
            });
        }
    }

    /**
     * duplicated: two rows for one (owner, key) — the unique index forbids it, so this guards the
     * index itself. Schedule firings are left to {@link #firingsOnce()}.
     */
    private void oneExecutionPerKey() {
        Map<String, List<String>> byKey = new LinkedHashMap<>();
        for (Execution e : db.executions().values()) {
            if (e.idempotencyKey() != null && !isFiring(e)) {
                byKey.computeIfAbsent(e.owner() + "\u0000" + e.idempotencyKey(), k -> new ArrayList<>()).add(e.id());
            }
        }
        byKey.forEach((k, ids) -> {
            if (ids.size() > 1) {
                violation(Kind.DUPLICATED, ids.get(0), "key " + k.substring(k.indexOf('\u0000') + 1)
                        + owner(k.substring(0, k.indexOf('\u0000'))) + " has " + ids.size() + " executions in the database: " + ids);
            }
        });
    }

    /**
     * duplicated: two terminal outcomes shown for one execution — its deliveries disagree, or one
     * disagrees with the database. webhook_ids_differ: its deliveries carry two webhook-ids (the
     * receiver's dedupe key must be the same on every attempt).
     */
    private void oneOutcomePerExecution() {
        Map<String, List<Delivery>> byExecution = deliveries();
        byExecution.forEach((id, ds) -> {
            Set<String> statuses = new LinkedHashSet<>();
            Set<String> webhookIds = new LinkedHashSet<>();
            ds.forEach(d -> {
                statuses.add(d.status());
                webhookIds.add(d.webhookId());
            });
            Execution e = db.executions().get(id);
            if (statuses.size() > 1) {
                violation(Kind.DUPLICATED, id, "webhooks delivered different statuses " + statuses);
            } else if (e != null && e.terminal() && !statuses.contains(e.status())) {
                violation(Kind.DUPLICATED, id, "webhook said " + statuses + " but the database says " + e.status());
            }
            if (webhookIds.size() > 1) {
                violation(Kind.WEBHOOK_IDS_DIFFER, id, ds.size() + " deliveries with webhook-ids " + webhookIds);
            }
        });
    }

    /**
     * webhooks_missing: a terminal execution submitted with a webhook that the receiver never
     * got. The harness waits out the delivery before it checks; a lost execution is not counted
     * here again.
     */
    private void webhooksDelivered(List<Submit> submits) {
        Map<String, List<Delivery>> byExecution = deliveries();
        for (Submit s : submits) {
            if (!s.webhook()) {
                continue;
            }
            for (String id : s.acknowledged().keySet()) {
                Execution e = db.executions().get(id);
                if (e != null && e.terminal() && !byExecution.containsKey(id)) {
                    violation(Kind.WEBHOOKS_MISSING, id, "ended " + e.status() + ", submitted with a webhook (key "
                            + s.key() + "), no delivery received");
                }
            }
        }
    }

    /**
     * overlaps: attempt k still leaves a mark after attempt k' > k made its first. Note
     * reran_after_end: an attempt that started after an earlier one had written its end.
     */
    private void attemptsApart() {
        Attempts.of(run.marks()).forEach((id, attempts) -> {
            for (int j = 1; j < attempts.size(); j++) {
                Attempt later = attempts.get(j);
                Attempt endedBefore = null;
                for (int i = 0; i < j; i++) {
                    Attempt earlier = attempts.get(i);
                    if (earlier.last() > later.first() + OVERLAP_TOLERANCE_MS) {
                        violation(Kind.OVERLAPS, id, "attempt " + earlier.attempt() + " marked until " + earlier.last()
                                + ", after attempt " + later.attempt() + " began at " + later.first() + " ("
                                + (earlier.last() - later.first()) + " ms): " + earlier.interval() + "; " + later.interval());
                    }
                    if (earlier.end() != null && earlier.end() <= later.first()) {
                        endedBefore = earlier;
                    }
                }
                if (endedBefore != null) {
                    note(Kind.RERAN_AFTER_END, id, later.interval() + " began after " + endedBefore.interval());
                }
            }
        });
    }

    /** cancelled_ran_on: working marks later than a cancel's acknowledgement plus the kill allowance. */
    private void cancelledStopped() {
        Map<String, Long> cancelledAt = new LinkedHashMap<>();
        for (Op o : run.history()) {
            if ("cancel".equals(o.op()) && o.acknowledged() && o.executionId() != null) {
                cancelledAt.merge(o.executionId(), o.t(), Math::min);
            }
        }
        Map<String, List<Mark>> late = new LinkedHashMap<>();
        for (Mark m : run.marks()) {
            Long at = cancelledAt.get(m.executionId());
            if (at != null && m.isWork() && m.t() > at + CANCEL_KILL_ALLOWANCE_MS) {
                late.computeIfAbsent(m.executionId(), id -> new ArrayList<>()).add(m);
            }
        }
        late.forEach((id, ms) -> {
            Mark last = ms.stream().max(Comparator.comparingLong(Mark::t)).orElseThrow();
            violation(Kind.CANCELLED_RAN_ON, id, "cancel acknowledged at " + cancelledAt.get(id) + "; " + ms.size()
                    + " working marks after the " + CANCEL_KILL_ALLOWANCE_MS + " ms allowance, the last at " + last.t()
                    + " (attempt " + last.attempt() + " on " + last.host() + ", " + (last.t() - cancelledAt.get(id))
                    + " ms after the cancel)");
        });
    }

    /**
     * firings_doubled: two executions for one firing of a schedule. A firing's key is
     * {@code schedule-<recurring job id>-<due epoch ms>} (ScheduleClock); the schedule is the one
     * holding that recurring job id, or else the execution's {@code schedule} label.
     */
    private void firingsOnce() {
        Map<String, Map<Long, List<String>>> bySchedule = new TreeMap<>();
        for (Execution e : db.executions().values()) {
            if (!isFiring(e)) {
                continue;
            }
            String key = e.idempotencyKey();
            int dash = key.lastIndexOf('-');
            long due;
            try {
                due = Long.parseLong(key.substring(dash + 1));
            } catch (NumberFormatException ex) {
                continue;   // not a clock firing's key (made by hand with the label): nothing to pair
            }
            String jobId = key.substring("schedule-".length(), dash);
            String schedule = db.scheduleByJobId().getOrDefault(jobId, e.owner() + "/" + e.labels().get("schedule"));
            bySchedule.computeIfAbsent(schedule, s -> new TreeMap<>())
                    .computeIfAbsent(due, d -> new ArrayList<>()).add(e.id());
        }
        bySchedule.forEach((schedule, dues) -> dues.forEach((due, ids) -> {
            if (ids.size() > 1) {
                violation(Kind.FIRINGS_DOUBLED, ids.get(0), "schedule " + schedule + " due " + due + " fired "
                        + ids.size() + " executions: " + ids);
            }
        }));
    }

    /**
     * output_incomplete: a succeeded execution whose submit expected N lines of stdout and whose
     * stored stdout (execution_output, the shown epoch) does not hold exactly N, without a gap.
     */
    private void outputComplete(List<Submit> submits) {
        for (Submit s : submits) {
            if (s.expectLines() == null) {
                continue;
            }
            for (String id : s.acknowledged().keySet()) {
                Execution e = db.executions().get(id);
                Stdout out = db.stdout().get(id);
                if (e == null || !"succeeded".equals(e.status()) || out == null) {
                    continue;
                }
                if (!out.whole() || out.lines() != s.expectLines()) {
                    violation(Kind.OUTPUT_INCOMPLETE, id, "expected " + s.expectLines() + " lines, the database holds "
                            + out.lines() + " (" + out.contiguousBytes() + " contiguous bytes of " + out.totalBytes()
                            + (out.truncated() ? ", truncated" : "") + ", epoch " + e.outputEpoch() + ")");
                }
            }
        }
    }

    private static boolean isFiring(Execution e) {
        return e.idempotencyKey() != null && e.idempotencyKey().startsWith("schedule-") && e.labels().containsKey("schedule");
    }

    private Map<String, List<Delivery>> deliveries() {
        Map<String, List<Delivery>> byExecution = new HashMap<>();
        run.deliveries().forEach(d -> byExecution.computeIfAbsent(d.executionId(), id -> new ArrayList<>()).add(d));
        return byExecution;
    }

    private static String owner(String owner) {
        return owner == null || owner.isEmpty() ? "" : " of " + owner;
    }

    private void violation(Kind kind, String executionId, String detail) {
        violations.add(new Violation(kind, executionId, detail));
    }

    private void note(Kind kind, String executionId, String detail) {
        notes.add(new Violation(kind, executionId, detail));
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** The CLI without the exit: 0 passed, 1 violations, 2 could not check. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!Set.of("--dir", "--jdbc-url", "--user", "--password", "--seed", "--failover-s").contains(a)
                    || i + 1 >= args.length) {
                err.println("usage: HistoryChecker --dir RUN_DIR --jdbc-url URL --user U --password P [--seed N]"
                        + " [--failover-s X]   (bad or incomplete option: " + a + ")");
                return 2;
            }
            opts.put(a, args[++i]);
        }
        for (String required : List.of("--dir", "--jdbc-url", "--user")) {
            if (!opts.containsKey(required)) {
                err.println("HistoryChecker: " + required + " is required");
                return 2;
            }
        }
        Path dir = Path.of(opts.get("--dir"));
        if (!Files.isRegularFile(dir.resolve(RunDirectory.HISTORY))) {
            err.println("HistoryChecker: no " + RunDirectory.HISTORY + " in " + dir.toAbsolutePath());
            return 2;
        }
        try (Connection c = DriverManager.getConnection(opts.get("--jdbc-url"), opts.get("--user"),
                opts.getOrDefault("--password", ""))) {
            Long seed = opts.containsKey("--seed") ? Long.valueOf(opts.get("--seed")) : null;
            Double failover = opts.containsKey("--failover-s") ? Double.valueOf(opts.get("--failover-s")) : null;
            Verdict v = check(dir, c, seed, failover);
            String json = v.toJsonText();
            Files.writeString(dir.resolve("faults.json"), json + "\n", StandardCharsets.UTF_8);
            out.println(json);
            v.violations().stream().limit(50).forEach(x -> err.println("VIOLATION " + x.kind().wire() + " "
                    + x.executionId() + ": " + x.detail()));
            err.println("HistoryChecker " + dir + ": " + v.summary());
            return v.passed() ? 0 : 1;
        } catch (SQLException | IOException | RuntimeException e) {
            err.println("HistoryChecker: cannot check " + dir + ": " + e);
            return 2;
        }
    }
}
