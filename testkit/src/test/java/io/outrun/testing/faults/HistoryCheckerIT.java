package io.outrun.testing.faults;

import static io.outrun.testing.faults.FaultRun.T0;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.testing.faults.Violation.Kind;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checker passes a clean fault run and catches each fault it must (issue 43's "Done when"):
 * every test starts from the same clean run, injects one fault, and expects exactly that kind.
 */
class HistoryCheckerIT {

    @TempDir
    Path dir;

    private FaultRun run;
    private final UUID a = UUID.randomUUID();    // webhook, 3 lines of output, ran once
    private final UUID b = UUID.randomUUID();    // re-driven after its node was partitioned away
    private final UUID c = UUID.randomUUID();    // cancelled while running, webhook delivered twice
    private final UUID d = UUID.randomUUID();    // ran again after its first attempt's end was lost

    @BeforeEach
    void aCleanRun() throws SQLException {
        run = new FaultRun(dir)
                .fault(T0 + 1_000, "partition", "w2").fault(T0 + 8_000, "heal", "w2")
                .submitted(1, T0, "k-a", a, true, 3).ran(a, 1, "w1", T0 + 100, T0 + 1_000, 0)
                .row(a, "k-a", "succeeded").stdout(a, "1\n2\n", "3\n").delivered(T0 + 1_100, "msg_a", a, "succeeded")
                .submitted(2, T0, "k-b", b, false, null)
                .ran(b, 1, "w2", T0 + 200, T0 + 1_500, null).ran(b, 2, "w3", T0 + 9_000, T0 + 10_000, 0)
                .row(b, "k-b", "succeeded", 2, "{}")
                .submitted(3, T0 + 1_000, "k-c", c, true, null).ran(c, 1, "w1", T0 + 2_000, T0 + 4_900, null)
                .cancelled(3, T0 + 3_000, c).row(c, "k-c", "cancelled")
                .delivered(T0 + 5_000, "msg_c", c, "cancelled").delivered(T0 + 6_000, "msg_c", c, "cancelled")
                .submitted(4, T0, "k-d", d, false, null)
                .ran(d, 1, "w2", T0 + 300, T0 + 800, 0).ran(d, 2, "w1", T0 + 9_000, T0 + 9_500, 0)
                .row(d, "k-d", "succeeded", 2, "{}")
                .indeterminate(5, T0, "k-e")
                .schedule("nightly", "outrun-schedule-n1")
                .fired(UUID.randomUUID(), "nightly", "outrun-schedule-n1", T0)
                .fired(UUID.randomUUID(), "nightly", "outrun-schedule-n1", T0 + 60_000);
    }

    @Test
    void passesACleanRun() throws SQLException {
        Verdict v = run.check();

        assertThat(v.violations()).isEmpty();
        assertThat(v.passed()).isTrue();
        assertThat(v.acknowledged()).isEqualTo(4);
        assertThat(v.indeterminate()).isEqualTo(1);
        // d's second attempt after its first one's end: at-least-once, a note and not a violation
        assertThat(v.notes()).singleElement().satisfies(n -> {
            assertThat(n.kind()).isEqualTo(Kind.RERAN_AFTER_END);
            assertThat(n.executionId()).isEqualTo(d.toString());
        });
        assertThat(v.nemesis()).hasSize(2);
    }

    @Test
    void catchesOneKeyAcknowledgedAsTwoExecutions() throws SQLException {
        UUID twin = UUID.randomUUID();
        run.submitted(6, T0 + 2_000, "k-b", twin, false, null).row(twin, "k-b2", "succeeded");

        assertOnly(run.check(), Kind.DUPLICATED, 1);
    }

    @Test
    void catchesWebhooksThatTellTwoOutcomes() throws SQLException {
        run.delivered(T0 + 1_200, "msg_a", a, "failed");

        assertOnly(run.check(), Kind.DUPLICATED, 1);
    }

    @Test
    void catchesTwoRowsForOneKey() throws SQLException {
        // The unique index is what forbids it; without it the checker must still see it.
        run.rows.update("DROP INDEX executions_owner_idempotency_key");
        run.row(UUID.randomUUID(), "k-a", "succeeded");

        assertOnly(run.check(), Kind.DUPLICATED, 1);
    }

    @Test
    void catchesALostAcknowledgedSubmit() throws SQLException {
        run.rows.update("DELETE FROM executions WHERE id = ?", b);

        Verdict v = run.check();

        assertOnly(v, Kind.LOST, 1);
        assertThat(v.violations().get(0).detail()).contains("not in the database");
    }

    @Test
    void catchesAnAcknowledgedSubmitStillRunningAtTheEnd() throws SQLException {
        UUID stuck = UUID.randomUUID();
        run.submitted(6, T0 + 2_000, "k-f", stuck, false, null).row(stuck, "k-f", "running");

        assertOnly(run.check(), Kind.LOST, 1);
    }

    @Test
    void catchesAnOldAttemptMarkingAfterTheNewOneStarted() throws SQLException {
        // b's first attempt, cut off by the partition, was still alive when attempt 2 began at T0 + 9000.
        run.ran(b, 1, "w2", T0 + 8_900, T0 + 9_200, null);

        Verdict v = run.check();

        assertOnly(v, Kind.OVERLAPS, 1);
        assertThat(v.violations().get(0).detail()).contains("attempt 1", "attempt 2", "200 ms");
    }

    @Test
    void catchesACancelledCommandRunningOn() throws SQLException {
        // cancel acknowledged at T0 + 3000: still alive 3 s later, past the 2 s allowance.
        run.ran(c, 1, "w1", T0 + 4_900, T0 + 6_000, null);

        assertOnly(run.check(), Kind.CANCELLED_RAN_ON, 1);
    }

    @Test
    void catchesAMissingWebhook() throws SQLException {
        UUID silent = UUID.randomUUID();
        run.submitted(6, T0 + 2_000, "k-g", silent, true, null).row(silent, "k-g", "failed");

        assertOnly(run.check(), Kind.WEBHOOKS_MISSING, 1);
    }

    @Test
    void catchesDeliveriesOfOneExecutionWithTwoWebhookIds() throws SQLException {
        run.delivered(T0 + 7_000, "msg_other", c, "cancelled");

        assertOnly(run.check(), Kind.WEBHOOK_IDS_DIFFER, 1);
    }

    @Test
    void catchesADoubledFiring() throws SQLException {
        run.rows.update("DROP INDEX executions_owner_idempotency_key");
        run.fired(UUID.randomUUID(), "nightly", "outrun-schedule-n1", T0 + 60_000);

        Verdict v = run.check();

        assertOnly(v, Kind.FIRINGS_DOUBLED, 1);
        assertThat(v.violations().get(0).detail()).contains("alice/nightly", "due " + (T0 + 60_000));
    }

    @Test
    void catchesIncompleteOutput() throws SQLException {
        UUID shortOne = UUID.randomUUID();
        run.submitted(6, T0 + 2_000, "k-h", shortOne, false, 3).row(shortOne, "k-h", "succeeded").stdout(shortOne, "1\n2\n");

        assertOnly(run.check(), Kind.OUTPUT_INCOMPLETE, 1);
    }

    @Test
    void theCommandLineWritesFaultsJsonAndExitsOneOnAViolation() throws Exception {
        run.write();
        assertThat(cli()).isZero();
        JsonNode clean = new ObjectMapper().readTree(dir.resolve("faults.json").toFile());
        assertThat(clean.get("acknowledged").asInt()).isEqualTo(4);
        assertThat(clean.get("seed").asLong()).isEqualTo(42);
        assertThat(clean.get("failover_s").asDouble()).isEqualTo(3.5);
        assertThat(clean.get("nemesis")).hasSize(2);
        assertThat(clean.get("reran_after_end").asInt()).isEqualTo(1);
        for (String field : new String[] {"lost", "duplicated", "overlaps", "webhooks_missing", "firings_doubled",
                "cancelled_ran_on", "output_incomplete"}) {
            assertThat(clean.get(field).asInt()).as(field).isZero();
        }

        run.rows.update("DELETE FROM executions WHERE id = ?", a);
        assertThat(cli()).isEqualTo(1);
        JsonNode failed = new ObjectMapper().readTree(dir.resolve("faults.json").toFile());
        assertThat(failed.get("lost").asInt()).isEqualTo(1);
        assertThat(failed.get("violations").get(0).get("executionId").asText()).isEqualTo(a.toString());
    }

    private int cli() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = HistoryChecker.run(new String[] {"--dir", dir.toString(), "--jdbc-url", run.url, "--user", run.user,
                "--password", run.password, "--seed", "42", "--failover-s", "3.5"},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("HistoryChecker");
        return code;
    }

    /** Exactly {@code n} violations, all of {@code kind}: the fault is caught and nothing else is blamed. */
    private static void assertOnly(Verdict v, Kind kind, int n) {
        assertThat(v.passed()).isFalse();
        assertThat(v.violations()).as(v.toJsonText()).hasSize(n).allSatisfy(x -> assertThat(x.kind()).isEqualTo(kind));
        assertThat(v.count(kind)).isEqualTo(n);
    }
}
