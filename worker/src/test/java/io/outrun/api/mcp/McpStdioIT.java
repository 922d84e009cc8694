package io.outrun.api.mcp;

import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.ServerParameters;
import io.modelcontextprotocol.client.transport.StdioClientTransport;
import io.modelcontextprotocol.json.McpJsonDefaults;
import io.outrun.api.http.ApiHarness;
import io.outrun.worker.testing.WorkerProcess;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** `outrun mcp` spawned as a host would, spoken to over its stdin/stdout by the SDK's MCP client. */
class McpStdioIT {

    @Test
    void theToolsOverStdioAgainstALiveOutrun() throws Exception {
        try (ApiHarness api = ApiHarness.start();
             WorkerProcess worker = WorkerProcess.start(api.core().config(), "w-mcp-stdio", 4)) {
            ServerParameters server = ServerParameters.builder(Path.of(System.getProperty("java.home"), "bin", "java").toString())
                    .args("-jar", WorkerProcess.jar().toString(), "mcp", "--api", api.base().toString(),
                            "--token", api.aliceToken)
                    .build();
            StdioClientTransport transport = new StdioClientTransport(server, McpJsonDefaults.getMapper());
            try (McpSyncClient client = McpClient.sync(transport).requestTimeout(Duration.ofSeconds(120))
                    .initializationTimeout(Duration.ofSeconds(60)).build()) {
                var init = client.initialize();
                assertThat(init.serverInfo().name()).isEqualTo("outrun");
                assertThat(init.instructions()).contains("background");
                McpScenario scenario = new McpScenario(client, McpScenario.PROCESSES);
                scenario.listsTheTools();
                scenario.backgroundRunPolledToItsOutput();
                scenario.foregroundRunAnswersInOneCall();
                scenario.anIdempotencyKeyRunsTheCommandOnce();
                scenario.readOutputPagesEveryByteByCursor(id -> api.alice().output(id, null, 0).stdout().text());
                scenario.filesInAndArtifactsOut();
                scenario.writeStdinAnswersPromptsLineByLine(false);
                scenario.aRunWaitingForItsWorkspaceSaysWhichRunHoldsIt();
                scenario.waitForOutputThenCursorThenCancel();
                scenario.identityProgressAndParentShow(api);
                scenario.badIdAnswersWithItsErrorCode();
                scenario.maxAttemptsOneIsNotRerunAfterItsWorkerIsKilled(worker);
            }
        }
    }
}
