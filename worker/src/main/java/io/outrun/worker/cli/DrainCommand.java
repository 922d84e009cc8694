package io.outrun.worker.cli;

import io.outrun.core.config.ConfigException;
import io.outrun.core.store.Database;
import io.outrun.core.store.Heartbeat;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** Asks a worker node, from anywhere, to drain as on SIGTERM; it then exits 0. */
@Command(name = "drain", mixinStandardHelpOptions = true,
        description = "Ask a live worker node (by node id or incarnation) to drain and stop, as on SIGTERM.")
final class DrainCommand implements Callable<Integer> {

    @Mixin
    DbOptions db;

    @Parameters(index = "0", paramLabel = "NODE", description = "Node id or incarnation, as `outrun nodes` lists them")
    String node;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws SQLException {
        try (var pool = Database.pool(db.toConfig(2), "drain"); Connection c = pool.getConnection()) {
            int asked = Heartbeat.requestDrain(c, node, NodesCommand.LIVE_WITHIN);
            if (asked == 0) {
                throw new ConfigException("no live node named " + node + " (see `outrun nodes`)");
            }
            spec.commandLine().getOut().printf("outrun: asked %d node%s named %s to drain; it stops once its runs"
                    + " finished or were handed back%n", asked, asked == 1 ? "" : "s", node);
        }
        return 0;
    }
}
