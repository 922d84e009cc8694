package io.outrun.api.http;

import io.javalin.http.Context;
import io.outrun.core.identity.RunPrincipal;
import io.outrun.core.store.ExecutionsTable;
import io.outrun.core.store.NamedSql;
import io.outrun.core.store.StoreException;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * What a run token may do (issue 31): act as its owner on its own execution and its children,
 * nothing else. Checked before the route, with one read of the run's row:
 * <ul>
 *   <li>the token's attempt must still run: once it ends (or a later attempt runs) the token is
 *       refused, 401 {@code run_ended};</li>
 *   <li>{@code POST /v1/executions} submits a child ({@code POST /v1/executions/batch}: several);
 *       {@code GET /v1/executions} lists its children;</li>
 *   <li>{@code GET /v1/executions/{id}} and its output, events and artifacts: itself or a child;</li>
 *   <li>{@code POST .../cancel}: a child; {@code POST .../progress}: itself;</li>
 *   <li>any other route: 403 {@code outside_run_scope}; any other execution (of any owner): 404,
 *       as an unknown one.</li>
 * </ul>
 */
final class RunScope {

    private static final Pattern EXECUTIONS = Pattern.compile("^/v1/executions/?$");
    private static final Pattern BATCH = Pattern.compile("^/v1/executions/batch/?$");
    private static final Pattern READ = Pattern.compile("^/v1/executions/([^/]+)(/output|/events|/artifacts(/.*)?)?/?$");
    private static final Pattern CANCEL = Pattern.compile("^/v1/executions/([^/]+)/cancel/?$");
    private static final Pattern PROGRESS = Pattern.compile("^/v1/executions/([^/]+)/progress/?$");

    /** What the checked request may go on with: the run, its depth (its children are one deeper), its JobRunr job. */
    record Allowed(RunPrincipal run, int depth, UUID jobId, Held held) {
    }

    /** What the run holds beyond its owner's name: a child of it may hold no more. */
    record Held(String network, String identityAudience, Set<String> secrets) {
    }

    private final DataSource dataSource;

    RunScope(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** Refuses what {@code run} may not do; else what the route needs to know of the run. */
    Allowed check(Context ctx, RunPrincipal run) {
        String method = ctx.method().name();
        String path = ctx.path();
        UUID target = null;
        boolean self = false;
        Matcher m;
        if ((EXECUTIONS.matcher(path).matches() && (method.equals("POST") || method.equals("GET")))
                || (method.equals("POST") && BATCH.matcher(path).matches())) {
            self = true; // a submit (or a batch) makes children; a listing shows only children
        } else if (method.equals("GET") && (m = READ.matcher(path)).matches()) {
            target = id(m.group(1));
            self = run.executionId().equals(target);
        } else if (method.equals("POST") && (m = CANCEL.matcher(path)).matches()) {
            target = id(m.group(1));
            if (run.executionId().equals(target)) {
                throw outside(ctx, "a run cannot cancel itself with its token; it ends by exiting");
            }
        } else if (method.equals("POST") && (m = PROGRESS.matcher(path)).matches()) {
            target = id(m.group(1));
            if (!run.executionId().equals(target)) {
                throw outside(ctx, "a run reports progress for itself only");
            }
            self = true;
        } else {
            throw outside(ctx, "a run token reaches its own execution and its children only");
        }
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = ExecutionsTable.RUN_SCOPE.prepare(c,
                NamedSql.Args.of("run", run.executionId(), "owner", run.owner(), "attempt", run.attempt())
                        .and("epoch", run.leaseEpoch()).and("target", self ? null : target));
             ResultSet rs = ps.executeQuery()) {
            if (!rs.next() || !rs.getBoolean("live")) {
                throw ended(run);
            }
            if (!self && !rs.getBoolean("child")) {
                throw ApiError.notFound(target == null ? "" : target.toString());
            }
            Array secrets = rs.getArray("secrets");
            Set<String> held = secrets == null ? Set.of()
                    : Set.of((String[]) secrets.getArray());
            return new Allowed(run, rs.getInt("depth"), rs.getObject("job_id", UUID.class),
                    new Held(rs.getString("network"), rs.getString("identity_audience"), held));
        } catch (SQLException e) {
            throw new StoreException("cannot check the scope of run " + run.executionId(), e);
        }
    }

    /** A malformed id is no execution of the run's: 404 as any unknown one. */
    private static UUID id(String text) {
        try {
            return UUID.fromString(text);
        } catch (IllegalArgumentException e) {
            throw ApiError.notFound(text.length() > 40 ? text.substring(0, 40) + "…" : text);
        }
    }

    static ApiError ended(RunPrincipal run) {
        return new ApiError(401, "run_ended", "This run token is for attempt " + run.attempt() + " of execution "
                + run.executionId() + ", which is no longer running: a run's token dies with its attempt.",
                "Use an owner token from outside a run; a later attempt of the run gets a token of its own.");
    }

    private static ApiError outside(Context ctx, String why) {
        return new ApiError(403, "outside_run_scope", ctx.method().name() + " " + ctx.path() + " is not open to a run"
                + " token: " + why + ".", "From inside a run, $OUTRUN_API answers: POST /v1/executions (a child; /batch: several),"
                + " GET /v1/executions (your children), GET /v1/executions/{id} (yourself or a child, also ?waitMs=,"
                + " /output, /events, /artifacts), POST /v1/executions/{child}/cancel, POST /v1/executions/{yours}/progress.");
    }
}
