package io.outrun.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outrun.client.wire.Json;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The lines of {@code outrun run --batch FILE}: what is a submission, what is skipped, what is a usage error. */
class BatchFileTest {

    private static List<BatchFile.Line> parse(String text) throws IOException {
        return BatchFile.parse("jobs.jsonl", new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void eachObjectLineIsASubmissionNumberedByItsLineInTheFile() throws IOException {
        List<BatchFile.Line> lines = parse("""
                # shards of the test suite
                {"command": "make test SHARD=1", "labels": {"shard": "1"}, "idempotencyKey": "t-1"}

                   # an indented comment
                {"command": "make test SHARD=2", "timeoutMs": 60000}
                \t
                {"command": "echo é", "maxAttempts": 1}""");
        assertThat(lines).extracting(BatchFile.Line::number).containsExactly(2, 5, 7);
        assertThat(lines.get(0).submission().idempotencyKey()).isEqualTo("t-1");
        assertThat(lines.get(0).submission().request().labels()).containsEntry("shard", "1");
        assertThat(lines.get(1).submission().idempotencyKey()).isNull();
        assertThat(lines.get(1).submission().request().timeoutMs()).isEqualTo(60_000L);
        assertThat(lines.get(2).submission().request().command()).isEqualTo("echo é");
    }

    @Test
    void aSubmissionIsSentAsTheLineSaysItWithoutItsKey() throws IOException {
        String line = "{\"command\":\"make\",\"timeoutMs\":5,\"maxOutputBytes\":1024,\"image\":\"alpine\","
                + "\"env\":{\"TZ\":\"UTC\"},\"workdir\":\"/w\",\"labels\":{\"a\":\"b\"},\"maxAttempts\":1,"
                + "\"files\":[{\"path\":\"a.txt\",\"content\":\"aGk=\",\"encoding\":\"base64\",\"mode\":\"0755\"}],"
                + "\"artifacts\":[\"out/*\"],\"workspace\":\"ws\",\"stdin\":true,\"memoryMb\":64,\"cpus\":0.5,"
                + "\"network\":\"egress\",\"secrets\":[\"NPM_TOKEN\"],\"delayMs\":1000,"
                + "\"retry\":{\"maxRetries\":2,\"backoffMs\":10,\"on\":[\"timed_out\"]},\"webhook\":\"https://h.example/x\","
                + "\"identity\":{\"audience\":\"https://svc.example\"},\"cancelWithParent\":false}";
        BatchFile.Line parsed = parse(line.replace("{\"command\"", "{\"idempotencyKey\":\"k\",\"command\"")).get(0);
        // Every field as written (the line's fields are in the record's order; numbers compare as text).
        assertThat(Json.mapper().writeValueAsString(parsed.submission().request())).isEqualTo(line);
        assertThat(parsed.submission().idempotencyKey()).isEqualTo("k");
    }

    @Test
    void aByteOrderMarkIsNotPartOfTheFirstLine() throws IOException {
        assertThat(parse("\uFEFF{\"command\": \"true\"}\n")).hasSize(1);
    }

    @Test
    void malformedJsonNamesItsLine() {
        assertThatThrownBy(() -> parse("{\"command\": \"a\"}\n# fine\n{\"command\": \"b\",}\n"))
                .isInstanceOf(UsageException.class)
                .hasMessageStartingWith("jobs.jsonl line 3: not valid JSON")
                .hasMessageContaining("column");
        assertThatThrownBy(() -> parse("{\"command\": \"a\"} {\"command\": \"b\"}"))
                .isInstanceOf(UsageException.class).hasMessageStartingWith("jobs.jsonl line 1: not valid JSON");
        assertThatThrownBy(() -> parse("{\"command\": \"a\"\n\"timeoutMs\": 5}"))
                .as("one object per line: a pretty-printed one is refused")
                .isInstanceOf(UsageException.class).hasMessageStartingWith("jobs.jsonl line 1: not valid JSON");
    }

    @Test
    void aLineMustBeAnObjectOfASubmissionsFields() {
        assertThatThrownBy(() -> parse("\"make test\""))
                .isInstanceOf(UsageException.class).hasMessageStartingWith("jobs.jsonl line 1: must be a JSON object");
        assertThatThrownBy(() -> parse("[{\"command\": \"a\"}]"))
                .isInstanceOf(UsageException.class).hasMessageContaining("line 1: must be a JSON object");
        assertThatThrownBy(() -> parse("{\"command\": \"a\"}\n{\"command\": \"b\", \"timeoutMS\": 5}"))
                .isInstanceOf(UsageException.class).hasMessageStartingWith("jobs.jsonl line 2: unknown field timeoutMS");
        assertThatThrownBy(() -> parse("{\"command\": \"a\", \"timeoutMs\": \"soon\"}"))
                .isInstanceOf(UsageException.class).hasMessageStartingWith("jobs.jsonl line 1: timeoutMs: wrong type");
        assertThatThrownBy(() -> parse("{\"command\": \"a\", \"labels\": {\"k\": {\"x\": 1}}}"))
                .isInstanceOf(UsageException.class).hasMessageStartingWith("jobs.jsonl line 1: labels.k: wrong type");
        assertThatThrownBy(() -> parse("{\"command\": \"a\", \"idempotencyKey\": 7}"))
                .isInstanceOf(UsageException.class).hasMessage("jobs.jsonl line 1: idempotencyKey must be a string");
    }

    @Test
    void aFileWithoutSubmissionsIsAUsageError() {
        assertThatThrownBy(() -> parse("")).isInstanceOf(UsageException.class).hasMessageContaining("holds no submissions");
        assertThatThrownBy(() -> parse("# only\n\n  # comments\n"))
                .isInstanceOf(UsageException.class).hasMessageContaining("holds no submissions");
    }

    @Test
    void anUnreadableFileIsAUsageError() {
        assertThatThrownBy(() -> BatchFile.read("/nonexistent/jobs.jsonl"))
                .isInstanceOf(UsageException.class).hasMessageStartingWith("--batch /nonexistent/jobs.jsonl cannot be read");
    }
}
