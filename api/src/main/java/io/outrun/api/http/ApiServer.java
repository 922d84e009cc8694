package io.outrun.api.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.javalin.Javalin;
import io.javalin.http.Context;
import io.javalin.http.Handler;
import io.javalin.http.HttpResponseException;
import io.outrun.api.auth.Authenticator;
import io.outrun.api.auth.TokenStore;
import io.outrun.api.http.FleetMetrics;
import io.outrun.api.mcp.McpHttpEndpoint;
import io.outrun.client.wire.ErrorBody;
import io.outrun.client.wire.Json;
import io.outrun.core.files.ArtifactStore;
import io.outrun.core.files.FilesConfig;
import io.outrun.core.files.WorkspaceStore;
import io.outrun.core.identity.RunPrincipal;
import io.outrun.core.identity.RunTokenVerifier;
import io.outrun.core.identity.SigningKeys;
import io.outrun.core.logging.ExecutionMdc;
import io.outrun.core.notify.ChangeSignal;
import io.outrun.core.owner.TooManyQueuedException;
import io.outrun.core.schedule.Schedules;
import io.outrun.core.secrets.SecretStore;
import io.outrun.core.service.ExecutionService;
import io.outrun.core.store.DiskFull;
import io.outrun.core.store.Outage;
import io.outrun.core.store.ProgressStore;
import io.outrun.core.store.ScheduleStore;
import io.outrun.core.store.WebhookStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.ServerConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Outrun's HTTP API on Javalin: routes, bearer-token auth, and the one error shape for
 * everything that goes wrong, including unknown routes, oversized bodies and bugs (a 500 that
 * shows no stack trace). {@link #ROUTES} is the route table; {@code /openapi.json} documents
 * exactly these routes (a test holds the two together).
 */
public final class ApiServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ApiServer.class);
    private static final String OWNER = "outrun.owner";
    private static final String ADMIN = "outrun.admin";
    /** Set when the request's token is a run token (issue 31): what RunScope allowed. */
    private static final String RUN = "outrun.run";
    private static final String ERROR_WRITTEN = "outrun.error";
    /** {@code /v1/executions/{id}} and its sub-routes: their log lines carry the execution id. */
    private static final Pattern EXECUTION_PATH = Pattern.compile("^/v1/executions/(?!batch$)([^/]+)");

    /** Every route served; {@code /openapi.json} documents exactly these. */
    public static final List<Route> ROUTES = List.of(
            new Route("GET", "/health"),
            new Route("GET", "/openapi.json"),
            new Route("POST", "/v1/executions"),
            new Route("GET", "/v1/executions"),
            new Route("GET", "/v1/executions/{id}"),
            new Route("GET", "/v1/executions/{id}/output"),
            new Route("POST", "/v1/executions/{id}/cancel"),
            new Route("GET", "/metrics"),
            new Route("GET", "/v1/admin/nodes"),
            new Route("GET", "/v1/executions/{id}/artifacts"),
            new Route("GET", "/v1/executions/{id}/artifacts/{name}"),
            new Route("GET", "/v1/workspaces"),
            new Route("GET", "/v1/workspaces/{name}"),
            new Route("DELETE", "/v1/workspaces/{name}"),
            new Route("POST", "/v1/executions/{id}/stdin"),
            new Route("GET", "/v1/secrets"),
            new Route("PUT", "/v1/secrets/{name}"),
            new Route("DELETE", "/v1/secrets/{name}"),
            new Route("POST", "/v1/webhook-secret"),
            new Route("GET", "/v1/executions/{id}/events"),
            new Route("POST", "/v1/schedules"),
            new Route("GET", "/v1/schedules"),
            new Route("DELETE", "/v1/schedules/{name}"),
            new Route("POST", "/v1/executions/{id}/progress"),
            new Route("GET", "/.well-known/jwks.json"),
            new Route("GET", "/.well-known/openid-configuration"),
            new Route("POST", "/v1/executions/batch"),
            new Route("POST", "/v1/schedules/{name}/pause"),
            new Route("POST", "/v1/schedules/{name}/resume"));

    private final Javalin app;
    private final ApiConfig config;
    private final HealthCheck healthCheck;
    private final Waiter waiter;
    private final McpHttpEndpoint mcp;
    private final ExecutionRoutes executions;

    private ApiServer(ApiConfig config, ExecutionService service, DataSource dataSource, Authenticator auth,
                      ChangeSignal signal, FilesConfig filesConfig) {
        this.config = config;
        this.waiter = new Waiter(signal, config.maxWaiters());
        SecretStore secretStore = new SecretStore(dataSource, config.secretsKey());
        WebhookRoutes webhooks = new WebhookRoutes(new WebhookStore(dataSource), config.secretsKey());
        ExecutionRoutes executions = this.executions = new ExecutionRoutes(config, service, new ExecutionListing(dataSource), waiter,
                filesConfig, secretStore, webhooks, new ProgressStore(dataSource), this::issuer);
        SigningKeys signingKeys = new SigningKeys(dataSource, config.secretsKey());
        IdentityRoutes identity = new IdentityRoutes(signingKeys, this::issuer);
        RunTokenVerifier runTokens = new RunTokenVerifier(signingKeys);
        RunScope runScope = new RunScope(dataSource);
        FileRoutes files = new FileRoutes(new ArtifactStore(dataSource), new WorkspaceStore(dataSource));
        int submitBodyBytes = filesConfig.submitBodyBytes(config.maxBodyBytes());
        byte[] openApi = openApi();
        FleetMetrics metrics = new FleetMetrics(dataSource);
        this.healthCheck = new HealthCheck(dataSource, HealthCheck.DEFAULT_WITHIN, service.diskFull());
        // The tools call this node's own /v1 with the caller's token: loopback unless bound to one interface.
        this.mcp = new McpHttpEndpoint(auth, () -> URI.create("http://" + (config.host().equals("0.0.0.0")
                ? "127.0.0.1" : config.host().contains(":") ? "[" + config.host() + "]" : config.host()) + ":" + port()),
                config.maxBodyBytes(), "0.1.0");
        Map<Route, Handler> handlers = new HashMap<>(Map.of(
                ROUTES.get(0), ctx -> health(ctx, healthCheck),
                ROUTES.get(1), ctx -> ctx.status(200).contentType("application/json").result(openApi),
                ROUTES.get(2), executions::submit,
                ROUTES.get(3), executions::list,
                ROUTES.get(4), executions::get,
                ROUTES.get(5), executions::output,
                ROUTES.get(6), executions::cancel,
                ROUTES.get(7), ctx -> ctx.status(200).contentType("text/plain; version=0.0.4; charset=utf-8")
                        .result(metrics.scrape()),
                ROUTES.get(8), ctx -> AdminRoutes.nodes(ctx, dataSource)));
        handlers.put(ROUTES.get(9), files::listArtifacts);
        handlers.put(ROUTES.get(10), files::downloadArtifact);
        handlers.put(ROUTES.get(11), files::listWorkspaces);
        handlers.put(ROUTES.get(12), files::getWorkspace);
        handlers.put(ROUTES.get(13), files::deleteWorkspace);
        handlers.put(ROUTES.get(14), executions::stdin);
        SecretRoutes secrets = new SecretRoutes(secretStore);
        handlers.put(ROUTES.get(15), secrets::list);
        handlers.put(ROUTES.get(16), secrets::put);
        handlers.put(ROUTES.get(17), secrets::delete);
        handlers.put(ROUTES.get(18), webhooks::rotateSecret);
        handlers.put(ROUTES.get(19), executions::events);
        ScheduleRoutes schedules = executions.schedules(new Schedules(
                new ScheduleStore(dataSource), service.books()));
        handlers.put(ROUTES.get(20), schedules::create);
        handlers.put(ROUTES.get(21), schedules::list);
        handlers.put(ROUTES.get(22), schedules::delete);
        handlers.put(ROUTES.get(23), executions::progress);
        handlers.put(ROUTES.get(24), identity::jwks);
        handlers.put(ROUTES.get(25), identity::discovery);
        handlers.put(ROUTES.get(26), executions.batch()::submit);
        handlers.put(ROUTES.get(27), schedules::pause);
        handlers.put(ROUTES.get(28), schedules::resume);
        this.app = Javalin.create(c -> {
            c.showJavalinBanner = false;
            c.startupWatcherEnabled = false;
            c.http.prefer405over404 = true;
            c.http.maxRequestSize = Math.max(submitBodyBytes, config.maxBatchBodyBytes());
            c.router.ignoreTrailingSlashes = true;
            c.jetty.addConnector((server, http) -> {
                ServerConnector connector = new ServerConnector(server, new HttpConnectionFactory(http));
                connector.setHost(config.host());
                connector.setPort(config.port());
                // Long polls hold a request without I/O for up to maxWaitMs: idle must outlast them.
                connector.setIdleTimeout(config.maxWaitMs() + 30_000);
                return connector;
            });
            c.jetty.modifyServer(server -> server.setErrorHandler(new JsonErrorHandler()));
            c.jetty.modifyServletContextHandler(mcp::mount);
        });
        app.before("/v1/*", ctx -> {
            ExecutionMdc.clear();
            // Guidance is worded for the caller's channel: a shared cache must not mix them.
            ctx.header("Vary", Channel.HEADER);
            authenticate(ctx, auth, runTokens, runScope);
            tagLogs(ctx);
        });
        // Jetty threads serve request after request: no tag may outlive its request.
        app.after(ctx -> ExecutionMdc.clear());
        for (Route route : ROUTES) {
            // An artifact's name is its path in the workdir: slashes and all (Javalin's <name>).
            String path = route.path().replace("/artifacts/{name}", "/artifacts/<name>");
            switch (route.method()) {
                case "GET" -> app.get(path, handlers.get(route));
                case "POST" -> app.post(path, handlers.get(route));
                case "DELETE" -> app.delete(path, handlers.get(route));
                case "PUT" -> app.put(path, handlers.get(route));
                default -> throw new IllegalStateException("no verb " + route.method());
            }
        }
        app.exception(ApiError.class, (e, ctx) -> write(ctx, e));
        app.exception(TooManyQueuedException.class, (e, ctx) -> write(ctx, ApiError.tooManyQueued(e)));
        app.exception(DiskFull.Refused.class, (e, ctx) -> write(ctx, ApiError.databaseDiskFull()));
        app.exception(HttpResponseException.class, (e, ctx) -> write(ctx, fromJavalin(e.getStatus(), ctx)));
        app.exception(Exception.class, (e, ctx) -> {
            if (Outage.is(e)) {
                LOG.warn("{} {}: database unavailable ({})", ctx.method(), ctx.path(), rootMessage(e));
                write(ctx, ApiError.databaseUnavailable());
                return;
            }
            if (service.diskFull().note(e)) {
                LOG.warn("{} {}: the database's disk is full ({})", ctx.method(), ctx.path(), rootMessage(e));
                write(ctx, ApiError.databaseDiskFull());
                return;
            }
            if (Outage.readOnly(e)) {
                LOG.warn("{} {}: the database is read-only ({})", ctx.method(), ctx.path(), rootMessage(e));
                write(ctx, ApiError.databaseReadOnly());
                return;
            }
            LOG.error("{} {} failed", ctx.method(), ctx.path(), e);
            write(ctx, internal());
        });
        for (int status : new int[] {400, 404, 405, 413, 500}) {
            app.error(status, ctx -> {
                if (ctx.attribute(ERROR_WRITTEN) == null) {
                    write(ctx, fromJavalin(status, ctx));
                }
            });
        }
    }

    /** Starts serving; {@link #port()} tells the port when {@code config.port()} was 0. */
    public static ApiServer start(ApiConfig config, ExecutionService service, DataSource dataSource,
                                  Authenticator auth, ChangeSignal signal) {
        return start(config, service, dataSource, auth, signal, FilesConfig.active());
    }

    /** As {@link #start(ApiConfig, ExecutionService, DataSource, Authenticator, ChangeSignal)}, with the files limits. */
    public static ApiServer start(ApiConfig config, ExecutionService service, DataSource dataSource,
                                  Authenticator auth, ChangeSignal signal, FilesConfig files) {
        ApiServer server = new ApiServer(config, service, dataSource, auth, signal, files);
        server.app.start();
        LOG.info("API listening on {}:{}", config.host(), server.port());
        return server;
    }

    public int port() {
        return app.port();
    }

    public ApiConfig config() {
        return config;
    }

    /** Long polls held now (at most {@link ApiConfig#maxWaiters()}). */
    public int longPollsWaiting() {
        return waiter.waiting();
    }

    @Override
    public void close() {
        mcp.close();
        app.stop();
        executions.close();
        healthCheck.close();
    }

    // --- shared by the handlers ---------------------------------------------------------------

    /** True when the request's token is an admin token (set by the authentication of /v1). */
    static boolean admin(Context ctx) {
        return Boolean.TRUE.equals(ctx.attribute(ADMIN));
    }

    /** What a run token may go on with (issue 31); null for an owner's token. */
    static RunScope.Allowed run(Context ctx) {
        return ctx.attribute(RUN);
    }

    /** The JWT in {@code Authorization: Bearer <jwt>}, or null when the header carries something else. */
    private static String runToken(String header) {
        String h = header.strip();
        if (h.length() < 8 || !h.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return null;
        }
        String token = h.substring(7).strip();
        return token.length() <= 8192 && RunTokenVerifier.looksLikeJwt(token) ? token : null;
    }

    /**
     * The fleet's issuer as this node names it: {@code --public-url}, else this node's own
     * address (loopback when it listens on every interface).
     */
    String issuer() {
        String configured = config.identity().publicUrl();
        if (configured != null) {
            return configured;
        }
        String host = config.host().equals("0.0.0.0") || config.host().equals("::") ? "127.0.0.1"
                : config.host().contains(":") ? "[" + config.host() + "]" : config.host();
        return "http://" + host + ":" + port();
    }

    static String owner(Context ctx) {
        String owner = ctx.attribute(OWNER);
        if (owner == null) {
            throw new IllegalStateException("route outside /v1 asked for an owner");
        }
        return owner;
    }

    static void json(Context ctx, int status, Object body) {
        try {
            ctx.status(status).contentType("application/json").result(Json.mapper().writeValueAsBytes(body));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot encode an answer", e);
        }
    }

    // --- internals ----------------------------------------------------------------------------

    private static void authenticate(Context ctx, Authenticator auth, RunTokenVerifier runTokens,
                                     RunScope scope) {
        String header = ctx.header("Authorization");
        if (header == null || header.isBlank()) {
            throw ApiError.identityRequired("This call needs an owner identity: no Authorization header was sent.");
        }
        String runToken = runToken(header);
        if (runToken != null) {
            // A run's token (issue 31): its owner, within its scope, while its attempt runs.
            RunPrincipal run = runTokens.verify(runToken).orElseThrow(() -> ApiError.identityRequired(
                    "The bearer token looks like a run token but is not one of this fleet's, valid and unexpired"
                            + " (identity tokens, OUTRUN_ID_TOKEN, are for other services, not for this API)."));
            ctx.attribute(OWNER, run.owner());
            ctx.attribute(ADMIN, false);
            ctx.attribute(RUN, scope.check(ctx, run));
            return;
        }
        Optional<TokenStore.Principal> principal = auth.principal(header);
        if (principal.isEmpty()) {
            throw ApiError.identityRequired("The bearer token is malformed, unknown or revoked.");
        }
        ctx.attribute(OWNER, principal.get().owner());
        ctx.attribute(ADMIN, principal.get().admin());
    }

    /** Log lines of this request (and a job it enqueues: JobRunr keeps the MDC) name the owner and execution. */
    private static void tagLogs(Context ctx) {
        Matcher m = EXECUTION_PATH.matcher(ctx.path());
        // ExecutionMdc is closed by clear() in the after-handler, not by try-with-resources: the
        // tag must also cover the exception handlers, which run after the route has returned.
        @SuppressWarnings("resource")
        ExecutionMdc ignored = ExecutionMdc.put(m.find() ? m.group(1) : null, owner(ctx), null);
    }

    /**
     * 200 when the node can take work; else 503 with the error, and {@code database}: why, in
     * words (e.g. "no primary answers among h1:5432, h2:5432 (failing over?)"), for a load
     * balancer's or an operator's eye.
     */
    private static void health(Context ctx, HealthCheck check) {
        HealthCheck.Health found = check.check();
        ApiError error = switch (found) {
            case OK -> null;
            case DISK_FULL -> ApiError.databaseDiskFull();
            case READ_ONLY -> ApiError.databaseReadOnly();
            case NO_PRIMARY -> ApiError.databaseNoPrimary();
            case UNREACHABLE -> ApiError.databaseUnavailable();
        };
        if (error == null) {
            json(ctx, 200, Map.of("status", "ok"));
        } else {
            write(ctx, error, check.reason(found));
        }
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }

    private static ApiError fromJavalin(int status, Context ctx) {
        return switch (status) {
            case 404 -> new ApiError(404, "route_not_found", "No route " + ctx.method() + " " + ctx.path() + ".",
                    "GET /openapi.json lists every route of this API.");
            case 405 -> new ApiError(405, "method_not_allowed", "Method " + ctx.method() + " is not allowed on "
                    + ctx.path() + ".", "GET /openapi.json lists the methods of every route.");
            case 413 -> new ApiError(413, "request_too_large", "The request is larger than this server accepts.",
                    "Send a shorter request.");
            case 400 -> ApiError.invalid("request", "is malformed");
            default -> status >= 500 ? internal() : new ApiError(status, "http_" + status,
                    "The request could not be handled (HTTP " + status + ").", "GET /openapi.json describes the API.");
        };
    }

    static ApiError internal() {
        return new ApiError(500, "internal_error", "The server failed to handle this request; the failure is logged.",
                "Retry shortly. Executions already submitted are not affected; if this repeats, tell the operator.");
    }

    private static void write(Context ctx, ApiError e) {
        write(ctx, e, null);
    }

    /** {@code database}: what /health adds, why the database cannot take work; null elsewhere. */
    private static void write(Context ctx, ApiError e, String database) {
        ctx.attribute(ERROR_WRITTEN, Boolean.TRUE);
        if (e.httpStatus() == 401) {
            ctx.header("WWW-Authenticate", "Bearer");
        }
        if (e.httpStatus() == 503) {
            // Freeing a disk or promoting a primary takes an operator: no point asking back in 5 s.
            ctx.header("Retry-After", e.code().equals("database_disk_full") || e.code().equals("database_read_only") ? "30" : "5");
        }
        if (e.httpStatus() == 429) {
            // A progress report too soon may come back in a second; a full queue takes longer.
            ctx.header("Retry-After", e.code().equals("progress_too_fast") ? "1" : String.valueOf(ApiError.QUEUE_RETRY_AFTER_S));
        }
        ErrorBody body = ErrorBody.of(e.code(), e.getMessage(), e.guidance(Channel.of(ctx)));
        if (database == null) {
            json(ctx, e.httpStatus(), body);
        } else {
            Map<String, Object> withReason = new LinkedHashMap<>();
            withReason.put("status", body.status());
            withReason.put("error", body.error());
            withReason.put("guidance", body.guidance());
            withReason.put("database", database);
            json(ctx, e.httpStatus(), withReason);
        }
    }

    private static byte[] openApi() {
        try (InputStream in = ApiServer.class.getResourceAsStream("openapi.json")) {
            if (in == null) {
                throw new IllegalStateException("openapi.json is missing from the classpath");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
