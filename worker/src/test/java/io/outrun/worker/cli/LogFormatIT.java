package io.outrun.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.client.OutrunClient;
import io.outrun.client.wire.SubmitRequest;
import io.outrun.core.logging.ExecutionMdc;
import io.outrun.worker.testing.DevProcess;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** Log lines as a log shipper and a person read them, tagged with the execution's owner. */
class LogFormatIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void jsonLogsAreOneObjectPerLineAndTagTheExecutionsLines(@TempDir Path dir) throws Exception {
        String id;
        String log;
        try (DevProcess dev = DevProcess.start(dir, Map.of("OUTRUN_LOG_FORMAT", "json"))) {
            OutrunClient client = new OutrunClient(dev.api(), Files.readString(dir.resolve("dev-token")).strip());
            id = client.submit(SubmitRequest.of("echo tagged").withWaitMs(20_000L)).executionId();
            log = dev.log();
        }
        List<JsonNode> lines = new ArrayList<>();
        for (String line : log.lines().toList()) {
            // The banner is for people, on stdout; every log line is JSON.
            if (line.startsWith("{")) {
                lines.add(JSON.readTree(line));
            }
        }
        assertThat(lines).isNotEmpty().allSatisfy(l -> {
            assertThat(l.path("level").asText()).isNotEmpty();
            assertThat(l.path("loggerName").asText()).isNotEmpty();
            assertThat(l.has("formattedMessage")).isTrue();
        });
        List<JsonNode> aboutIt = lines.stream().filter(l -> l.path("formattedMessage").asText().contains(id)).toList();
        assertThat(aboutIt).as("lines about the execution").isNotEmpty()
                // Tagged by the API request that submitted it; JobRunr carries the MDC into the job.
                .allSatisfy(l -> assertThat(l.path("mdc").path(ExecutionMdc.OWNER).asText()).isEqualTo("dev"));
    }

    @Test
    void logFormatIsAnOptionOfEveryCommandAndABadOneIsAUsageError() {
        StringWriter err = new StringWriter();
        CommandLine cl = Outrun.commandLine();
        cl.setOut(new PrintWriter(new StringWriter(), true));
        cl.setErr(new PrintWriter(err, true));
        assertThat(cl.execute("migrate", "--log-format", "xml")).isEqualTo(2);
        assertThat(err.toString()).contains("log format must be text or json, got: xml");
        try {
            assertThat(Outrun.commandLine().execute("worker", "--log-format", "JSON", "--help")).isZero();
        } finally {
            LogFormat.TEXT.apply();
        }
    }
}
