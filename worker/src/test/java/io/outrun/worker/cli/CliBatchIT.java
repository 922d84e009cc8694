package io.outrun.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.api.http.ApiHarness;
import io.outrun.client.wire.ExecutionView;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.process.ProcessSandbox;
import io.outrun.worker.node.WorkerConfig;
import io.outrun.worker.node.WorkerNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code outrun run --batch FILE} against a real API node and worker: what is stored, what is refused, by line. */
class CliBatchIT {

    private static ApiHarness api;
    private static WorkerNode worker;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        api = ApiHarness.start();
        worker = WorkerNode.start(api.core(), WorkerConfig.defaults("w-cli-batch-it"), new ProcessSandbox(), Limits.DEFAULTS);
    }

    @AfterAll
    static void stop() {
        worker.close();
        api.close();
    }

    private CliIT.Result batch(Path file, String... more) {
        List<String> args = new java.util.ArrayList<>(List.of("run", "--api", api.base().toString(), "--token",
                api.aliceToken, "--batch", file.toString()));
        args.addAll(List.of(more));
        return CliIT.outrun(args.toArray(String[]::new));
    }

    @Test
    void eachLineIsStoredOrRefusedAloneAndPrintedWithItsLine() throws IOException {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        String key = "cli-batch-" + UUID.randomUUID();
        Path file = dir.resolve("jobs.jsonl");
        Files.writeString(file, String.join("\n",
                "# a batch from the CLI",
                "{\"command\": \"echo one\", \"labels\": {\"batch\": \"" + tag + "\"}}",
                "{\"command\": \"echo never\", \"timeoutMs\": -5}",
                "",
                "{\"command\": \"echo two\", \"labels\": {\"batch\": \"" + tag + "\"}, \"idempotencyKey\": \"" + key + "\"}",
                "{\"command\": \"echo never\", \"waitMs\": 1000}") + "\n");
        CliIT.Result r = batch(file);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        List<String> out = r.out().lines().toList();
        assertThat(out).hasSize(4);
        assertThat(out.get(0)).matches("2\t[0-9a-f-]{36}");
        assertThat(out.get(1)).startsWith("3\terror\tinvalid_request\ttimeoutMs");
        assertThat(out.get(2)).matches("5\t[0-9a-f-]{36}");
        assertThat(out.get(3)).startsWith("6\terror\twait_not_in_batch\t");
        assertThat(r.err()).contains("4 submissions from " + file + ": 2 accepted, 2 refused (lines 3, 6)");

        String one = out.get(0).split("\t")[1];
        String two = out.get(2).split("\t")[1];
        CliIT.WorkerApiWait.until(api.alice(), one, ExecutionView::finished);
        CliIT.WorkerApiWait.until(api.alice(), two, ExecutionView::finished);
        ExecutionView first = api.alice().get(one, 0, "full");
        assertThat(first.status()).isEqualTo("succeeded");
        assertThat(first.stdout().text()).isEqualTo("one\n");
        assertThat(first.labels()).containsEntry("batch", tag);
        assertThat(api.alice().get(two, 0, "full").stdout().text()).isEqualTo("two\n");

        // Its key again: the same execution, replayed, and nothing new; all accepted exits 0.
        Path again = dir.resolve("again.jsonl");
        Files.writeString(again, "{\"command\": \"echo two\", \"labels\": {\"batch\": \"" + tag + "\"}, \"idempotencyKey\": \""
                + key + "\"}\n");
        CliIT.Result replay = batch(again);
        assertThat(replay.code()).as(replay.err()).isZero();
        assertThat(replay.out()).isEqualTo("1\t" + two + "\treplayed\n");
        assertThat(api.alice().list(null, java.util.Map.of("batch", tag), 10, null).executions()).hasSize(2);
    }

    @Test
    void jsonPrintsTheApisResultWithItsLine() throws IOException {
        Path file = dir.resolve("j.jsonl");
        Files.writeString(file, "{\"command\": \"true\"}\n{\"command\": \"true\", \"bogusField\": 1}\n");
        CliIT.Result bad = batch(file, "--json");
        assertThat(bad.code()).as("an unknown field is the CLI's usage error, before sending").isEqualTo(2);
        assertThat(bad.err()).contains("line 2: unknown field bogusField");
        Files.writeString(file, "{\"command\": \"true\"}\n");
        CliIT.Result r = batch(file, "--json", "--log-format", "text"); // the root's option is no run option
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).startsWith("{\"line\":1,\"index\":0,\"status\":202,\"execution\":{\"executionId\":\"");
    }
}
