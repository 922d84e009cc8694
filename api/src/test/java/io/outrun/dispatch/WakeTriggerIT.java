package io.outrun.dispatch;

import io.outrun.execution.Execution;
import io.outrun.execution.JobIds;
import io.outrun.execution.Submission;
import io.outrun.service.Core;
import io.outrun.store.DatabaseConfig;
import io.outrun.testing.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jobrunr.jobs.Job;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The wake-up of instant pickup is sent by the transaction that makes a job ENQUEUED (migration
 * V8 and the triggers {@link JobRunrStorage} installs), to one free node, never failing the
 * enqueue. Nodes here are rows of {@code nodes} with a LISTEN connection each: no worker runs,
 * so nothing else sends on their channels.
 */
class WakeTriggerIT {

    @Test
    void aSubmissionWakesOneFreeNodeAsItsJobCommits() throws Exception {
        DatabaseConfig db = TestDatabase.fresh(DatabaseConfig::new);
        try (Core api = Core.open(db, "api", Duration.ofMinutes(5));
             Connection a = listener(db, "outrun_wake_t_a"); Connection b = listener(db, "outrun_wake_t_b")) {
            node(api, "t-a", "outrun_wake_t_a", 0, 4);
            node(api, "t-b", "outrun_wake_t_b", 0, 4);
            api.service().submit(Submission.of("ann", "true"));
            List<String> heard = new ArrayList<>();
            heard.addAll(payloads(a, 2000));
            heard.addAll(payloads(b, 200));
            assertThat(heard).as("one free node, woken as free").containsExactly("free");
        }
    }

    @Test
    void whenNoNodeIsFreeEveryBusyNodeIsTold() throws Exception {
        DatabaseConfig db = TestDatabase.fresh(DatabaseConfig::new);
        try (Core api = Core.open(db, "api", Duration.ofMinutes(5));
             Connection a = listener(db, "outrun_wake_t_c"); Connection b = listener(db, "outrun_wake_t_d")) {
            node(api, "t-c", "outrun_wake_t_c", 2, 2);
            node(api, "t-d", "outrun_wake_t_d", 1, 1);
            api.service().submit(Submission.of("bo", "true"));
            assertThat(payloads(a, 2000)).containsExactly("busy");
            assertThat(payloads(b, 2000)).containsExactly("busy");
        }
    }

    /** A delayed job (a hand-back's retry) coming due is enqueued by an UPDATE: that wakes too. */
    @Test
    void aScheduledJobThatBecomesEnqueuedWakesANode() throws Exception {
        DatabaseConfig db = TestDatabase.fresh(DatabaseConfig::new);
        try (Core api = Core.open(db, "api", Duration.ofMinutes(5)); Connection a = listener(db, "outrun_wake_t_e")) {
            node(api, "t-e", "outrun_wake_t_e", 0, 4);
            Execution x = api.submissions().insert(Submission.of("cy", "true")).execution();
            api.dispatcher().enqueueIn(Duration.ofMinutes(1), x.id(), x.dispatchSeq(), x.owner(), "true", 2);
            assertThat(payloads(a, 500)).as("a SCHEDULED job wakes no one").isEmpty();
            Job job = api.storage().getJobById(JobIds.of(x.id(), x.dispatchSeq()));
            // What JobRunr's master does when the delay ends.
            job.enqueue();
            api.storage().save(job);
            assertThat(payloads(a, 2000)).containsExactly("free");
            // Saved again while still enqueued (no change of state): no second wake-up.
            api.storage().save(api.storage().getJobById(job.getId()));
            assertThat(payloads(a, 500)).isEmpty();
        }
    }

    /** A wake-up is a hint: a NOTIFY that fails (here an empty channel name) never fails the submission. */
    @Test
    void aFailingWakeUpNeverFailsTheEnqueue() throws Exception {
        DatabaseConfig db = TestDatabase.fresh(DatabaseConfig::new);
        try (Core api = Core.open(db, "api", Duration.ofMinutes(5))) {
            node(api, "t-broken", "", 0, 4);
            Execution x = api.service().submit(Submission.of("di", "true")).execution();
            Job job = api.storage().getJobById(JobIds.of(x.id(), x.dispatchSeq()));
            assertThat(job.getState().name()).isEqualTo("ENQUEUED");
        }
    }

    private static void node(Core api, String id, String channel, int running, int slots) throws SQLException {
        try (Connection c = api.pool().getConnection();
             var ps = c.prepareStatement("INSERT INTO nodes (incarnation, node_id, version, wake_channel, slots, running)"
                     + " VALUES (?, ?, 'test', ?, ?, ?)")) {
            ps.setString(1, id);
            ps.setString(2, id);
            ps.setString(3, channel);
            ps.setInt(4, slots);
            ps.setInt(5, running);
            ps.executeUpdate();
        }
    }

    private static Connection listener(DatabaseConfig db, String channel) throws SQLException {
        Connection c = DriverManager.getConnection(db.url(), db.user(), db.password());
        try (Statement st = c.createStatement()) {
            st.execute("LISTEN " + channel);
        }
        return c;
    }

    /** What arrived on this connection within {@code waitMs}. */
    private static List<String> payloads(Connection c, int waitMs) throws SQLException {
        List<String> got = new ArrayList<>();
        long end = System.nanoTime() + waitMs * 1_000_000L;
        long left;
        while ((left = (end - System.nanoTime()) / 1_000_000) > 0) {
            PGNotification[] batch = c.unwrap(PGConnection.class).getNotifications((int) left);
            if (batch != null) {
                for (PGNotification n : batch) {
                    got.add(n.getParameter());
                }
            }
        }
        return got;
    }
}
