package io.outrun.api.http;

import io.javalin.http.Context;
import io.outrun.core.store.Heartbeat;
import io.outrun.core.store.StoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/** Fleet-wide views for admin tokens (`outrun token create --owner NAME --admin`); owners' tokens get 403. */
final class AdminRoutes {

    private AdminRoutes() {
    }

    /** {@code GET /v1/admin/nodes}: the live worker nodes, as `outrun nodes` lists them. */
    static void nodes(Context ctx, DataSource dataSource) {
        requireAdmin(ctx);
        List<Heartbeat.LiveNode> nodes;
        try (Connection c = dataSource.getConnection()) {
            nodes = Heartbeat.live(c, Heartbeat.LIVE_WITHIN);
        } catch (SQLException e) {
            throw new StoreException("cannot list the live nodes", e);
        }
        ApiServer.json(ctx, 200, Map.of("nodes", nodes.stream().map(AdminRoutes::view).toList()));
    }

    private static Map<String, Object> view(Heartbeat.LiveNode n) {
        return Map.of("nodeId", n.nodeId(), "incarnation", n.incarnation(), "version", n.version() == null ? "" : n.version(),
                "slots", n.slots(), "running", n.running(), "heartbeatAgeSeconds", n.heartbeatAgeSeconds(),
                "state", n.draining() ? "draining" : "up");
    }

    private static void requireAdmin(Context ctx) {
        if (!ApiServer.admin(ctx)) {
            throw new ApiError(403, "admin_required", "This route shows the whole fleet and needs an admin token.",
                    "Use a token made with `outrun token create --owner NAME --admin`; an owner's own token sees only"
                            + " its executions (GET /v1/executions).");
        }
    }
}
