package io.outrun.worker.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outrun.core.store.Database;
import io.outrun.core.store.Heartbeat;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** The fleet's live worker nodes, read from the shared database. */
@Command(name = "nodes", mixinStandardHelpOptions = true,
        description = "List live worker nodes: id, incarnation, version, slots, running, heartbeat age, draining.")
final class NodesCommand implements Callable<Integer> {

    static final Duration LIVE_WITHIN = Heartbeat.LIVE_WITHIN;

    @Mixin
    DbOptions db;

    @Option(names = "--json", description = "One JSON object per line")
    boolean json;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws SQLException {
        try (var pool = Database.pool(db.toConfig(2), "nodes"); Connection c = pool.getConnection()) {
            List<Heartbeat.LiveNode> nodes = Heartbeat.live(c, LIVE_WITHIN);
            var out = spec.commandLine().getOut();
            if (json) {
                var mapper = new ObjectMapper();
                for (Heartbeat.LiveNode n : nodes) {
                    out.println(mapper.writeValueAsString(n));
                }
            } else {
                out.printf("%-30s %-40s %-8s %5s %7s %9s %s%n", "NODE", "INCARNATION", "VERSION", "SLOTS", "RUNNING",
                        "HEARTBEAT", "STATE");
                for (Heartbeat.LiveNode n : nodes) {
                    out.printf("%-30s %-40s %-8s %5d %7d %8.1fs %s%n", n.nodeId(), n.incarnation(), n.version(), n.slots(),
                            n.running(), n.heartbeatAgeSeconds(), n.draining() ? "draining" : "up");
                }
            }
            out.flush();
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        return 0;
    }
}
