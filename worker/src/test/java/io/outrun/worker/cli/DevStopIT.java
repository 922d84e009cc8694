package io.outrun.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.client.OutrunClient;
import io.outrun.client.wire.ExecutionView;
import io.outrun.client.wire.SubmitRequest;
import io.outrun.testing.Await;
import io.outrun.worker.testing.DevProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `outrun dev` stopped as a user stops it (SIGTERM, as Ctrl-C would): it drains as a worker
 * does, so a running execution is handed back without spending an attempt and runs again at the
 * next start, and the stop says so in one line (issue 25 #9).
 */
class DevStopIT {

    @Test
    void aStopHandsBackARunningExecutionThatSucceedsAfterTheRestart(@TempDir Path dir) throws Exception {
        String id;
        try (DevProcess first = DevProcess.start(dir)) {
            OutrunClient client = new OutrunClient(first.api(), Files.readString(dir.resolve("dev-token")).strip());
            id = client.submit(SubmitRequest.of("echo started; sleep 6; echo finished").withMaxAttempts(1)).executionId();
            Await.until("the command runs", Duration.ofSeconds(30),
                    () -> client.get(id).stdout().text().contains("started"));
            first.close(); // SIGTERM
            assertThat(first.log()).contains("outrun dev: stopping; 1 running execution(s) get 2 s to finish, the rest are"
                    + " handed back (no attempt spent) and run again at the next start").doesNotContain("Exception");
        }
        try (DevProcess second = DevProcess.start(dir)) {
            OutrunClient client = new OutrunClient(second.api(), Files.readString(dir.resolve("dev-token")).strip());
            ExecutionView done = Await.until("it runs again and ends", Duration.ofSeconds(60), () -> {
                ExecutionView v = client.get(id, 1000);
                return v.status().equals("queued") || v.status().equals("running") ? null : v;
            });
            assertThat(done.status()).as("%s", done.error()).isEqualTo("succeeded");
            assertThat(done.attempt()).as("the stop spent no attempt (maxAttempts 1)").isEqualTo(1);
            assertThat(done.stdout().text()).isEqualTo("started\nfinished\n");
        }
    }
}
