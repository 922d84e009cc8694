package io.outrun.core.books;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.core.execution.JobIds;
import io.outrun.core.schedule.ScheduleFiring;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Rows;
import io.outrun.testing.TestDatabase;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.util.UUID;
import org.jobrunr.jobs.Job;
import org.junit.jupiter.api.Test;

/**
 * A database written before issue 41 moved the classes JobRunr's jobs name: migration V24 gives
 * the books not yet ended their new class names (a scheduled one would otherwise be warned about
 * by every node's JobRunr server), and leaves ended ones as history.
 */
class RenamedJobClassesIT {

    private static final String OLD_RUNNER = "io.outrun.dispatch.ExecutionRunner";
    private static final String OLD_FIRING = "io.outrun.schedule.ScheduleFiring";

    @Test
    void givesOpenBooksAndSchedulesTheirNewClassNames() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Rows rows = Rows.on(db.url(), db.user(), db.password());
        try (Core api = Core.open(db, "api")) {
            UUID open = UUID.randomUUID();
            UUID ended = UUID.randomUUID();
            api.books().enqueue(open, 1, "alice", "sleep 60");
            api.books().enqueue(ended, 1, "alice", "true");
            UUID openJob = JobIds.of(open, 1);
            UUID endedJob = JobIds.of(ended, 1);
            String runner = ExecutionRunner.class.getName();
            // As the previous version wrote them: its class name in the JSON and the signature.
            rows.update("UPDATE jobrunr_jobs SET jobasjson = replace(jobasjson, ?, ?), jobsignature = replace(jobsignature, ?, ?)",
                    runner, OLD_RUNNER, runner, OLD_RUNNER);
            rows.update("UPDATE jobrunr_jobs SET state = 'SUCCEEDED' WHERE id = ?", endedJob.toString());
            rows.update("INSERT INTO jobrunr_recurring_jobs (id, version, jobasjson, createdat) VALUES ('s1', 1, ?, 0)",
                    "{\"jobDetails\":{\"className\":\"" + OLD_FIRING + "\",\"methodName\":\"fire\"}}");
            assertThat(rows.single("SELECT count(*) FROM jobrunr_jobs WHERE jobsignature LIKE ?", OLD_RUNNER + "%")).isEqualTo(2);

            try (Connection c = api.pool().getConnection(); Statement st = c.createStatement()) {
                st.execute(migration());
            }

            Job job = api.storage().getJobById(openJob);
            assertThat(job.getJobDetails().getClassName()).isEqualTo(runner);
            assertThat(job.getJobSignature()).startsWith(runner + ".");
            assertThat(rows.single("SELECT count(*) FROM jobrunr_jobs WHERE id = ? AND jobsignature LIKE ?",
                    endedJob.toString(), OLD_RUNNER + "%")).as("an ended book keeps its history").isEqualTo(1);
            assertThat(rows.single("SELECT count(*) FROM jobrunr_recurring_jobs WHERE id = 's1' AND jobasjson LIKE ?",
                    "%" + ScheduleFiring.class.getName() + "%")).isEqualTo(1);
        }
    }

    private static String migration() throws Exception {
        try (InputStream in = RenamedJobClassesIT.class.getResourceAsStream("/db/migration/V24__jobrunr_class_names.sql")) {
            assertThat(in).as("V24 on the classpath").isNotNull();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
