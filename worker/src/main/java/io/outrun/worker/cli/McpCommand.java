package io.outrun.worker.cli;

import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.outrun.cli.ClientOptions;
import io.outrun.client.OutrunClient;
import io.outrun.api.mcp.OutrunTools;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * Outrun's tools for an agent host over the Model Context Protocol on stdin/stdout, against an
 * Outrun API (the same tools as the API node's {@code /mcp}). stdout carries only protocol
 * messages; logs go to stderr. Ends when the host closes stdin.
 */
@Command(name = "mcp", mixinStandardHelpOptions = true, description = {
        "Serve Outrun's tools to an agent host over MCP (stdio): run_command, get_execution, read_output,"
                + " cancel_execution, list_executions.",
        "Add to the host's MCP configuration as the command `java -jar outrun.jar mcp --api URL --token T`."})
final class McpCommand implements Callable<Integer> {

    @Mixin
    ClientOptions clientOptions;

    @Override
    public Integer call() throws InterruptedException {
        OutrunClient client = clientOptions.client();
        CountDownLatch stdinClosed = new CountDownLatch(1);
        InputStream in = new FilterInputStream(System.in) {
            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                int n = super.read(b, off, len);
                if (n < 0) {
                    stdinClosed.countDown();
                }
                return n;
            }

            @Override
            public int read() throws IOException {
                int c = super.read();
                if (c < 0) {
                    stdinClosed.countDown();
                }
                return c;
            }
        };
        McpJsonMapper mapper = McpJsonDefaults.getMapper();
        McpSyncServer server = new OutrunTools(exchange -> client, mapper)
                .serve(McpServer.sync(new StdioServerTransportProvider(mapper, in, System.out)), Outrun.VERSION);
        stdinClosed.await();
        server.closeGracefully();
        return 0;
    }
}
