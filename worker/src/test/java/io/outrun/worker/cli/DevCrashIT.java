package io.outrun.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.client.OutrunClient;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.SubmitRequest;
import io.outrun.testing.Await;
import io.outrun.worker.testing.DevProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** `outrun dev` as a user meets it: killed with SIGKILL, started again, and started twice. */
class DevCrashIT {

    @Test
    void restartsAfterSigkillWithEveryEarlierExecution(@TempDir Path dir) throws Exception {
        List<String> ids = new ArrayList<>();
        long orphanPid;
        try (DevProcess first = DevProcess.start(dir)) {
            String token = Files.readString(dir.resolve("dev-token")).strip();
            OutrunClient client = new OutrunClient(first.api(), token);
            for (int i = 0; i < 3; i++) {
                ExecutionView v = client.submit(SubmitRequest.of("echo run " + i).withWaitMs(20_000L));
                assertThat(v.status()).isEqualTo("succeeded");
                ids.add(v.executionId());
            }
            // Acknowledged (202) a moment before the crash: durable commits keep it too.
            ids.add(client.submit(SubmitRequest.of("echo last before the crash")).executionId());
            assertThat(setting(first.jdbcUrl(), dir, "synchronous_commit")).isEqualTo("on");
            assertThat(setting(first.jdbcUrl(), dir, "fsync")).isEqualTo("on");
            assertThat(first.log()).as("text logs name the owner of an execution's lines")
                    .containsPattern("(?m)" + ids.get(0) + ".* owner=dev( attempt=\\d+)?$");
            orphanPid = Long.parseLong(Files.readAllLines(dir.resolve("postgres/postmaster.pid")).get(0).strip());
            first.kill();
        }
        assertThat(ProcessHandle.of(orphanPid).map(ProcessHandle::isAlive))
                .as("SIGKILL leaves the embedded PostgreSQL running").contains(true);

        try (DevProcess second = DevProcess.start(dir)) {
            assertThat(second.log()).contains("stopped the PostgreSQL (pid " + orphanPid + ")").doesNotContain("Exception");
            assertThat(ProcessHandle.of(orphanPid).map(ProcessHandle::isAlive).orElse(false)).isFalse();
            String token = Files.readString(dir.resolve("dev-token")).strip();
            OutrunClient client = new OutrunClient(second.api(), token);
            for (int i = 0; i < 3; i++) {
                ExecutionView v = client.get(ids.get(i));
                assertThat(v.status()).isEqualTo("succeeded");
                assertThat(v.stdout().text()).isEqualTo("run " + i + "\n");
            }
            String last = ids.get(3);
            ExecutionView v = Await.until("the last submission ends", Duration.ofSeconds(60), () -> {
                ExecutionView now = client.get(last, 1000);
                return now.status().equals("succeeded") ? now : null;
            });
            assertThat(v.stdout().text()).isEqualTo("last before the crash\n");
        }
    }

    @Test
    void aSecondDevOnTheSameDirectorySaysSoInOneLine(@TempDir Path dir) throws Exception {
        try (DevProcess first = DevProcess.start(dir)) {
            DevProcess second = DevProcess.launch(dir);
            int code = second.awaitExit(Duration.ofSeconds(60));
            assertThat(code).isNotZero();
            String out = second.log().strip();
            assertThat(out).isEqualTo("outrun: another `outrun dev` (pid " + first.pid() + ") is using --data-dir "
                    + dir.toAbsolutePath().normalize() + "; stop it first, or give this one another --data-dir");
            // The first one is untouched.
            String token = Files.readString(dir.resolve("dev-token")).strip();
            assertThat(new OutrunClient(first.api(), token).submit(SubmitRequest.of("echo still here").withWaitMs(20_000L))
                    .status()).isEqualTo("succeeded");
        }
    }

    private static String setting(String jdbcUrl, Path dir, String name) throws SQLException, java.io.IOException {
        String password = Files.readString(dir.resolve(DevCommand.DB_PASSWORD_FILE)).strip();
        try (Connection c = DriverManager.getConnection(jdbcUrl, "postgres", password);
             ResultSet rs = c.createStatement().executeQuery("SHOW " + name)) {
            rs.next();
            return rs.getString(1);
        }
    }
}
