package io.outrun.api.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.outrun.api.auth.Authenticator;
import io.outrun.client.OutrunClient;
import io.outrun.client.wire.ErrorBody;
import io.outrun.client.wire.Json;
import io.outrun.core.store.Outage;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.eclipse.jetty.servlet.FilterHolder;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The MCP tools over streamable HTTP at {@value #PATH} on an API node: the SDK's servlet
 * transport mounted in Javalin's Jetty, behind a filter that asks for the same bearer token as
 * {@code /v1}. Each tool call goes to this node's own {@code /v1} with the caller's token, so
 * owner scoping, limits and errors are exactly the HTTP API's.
 */
public final class McpHttpEndpoint implements AutoCloseable {

    public static final String PATH = "/mcp";

    private static final Logger LOG = LoggerFactory.getLogger(McpHttpEndpoint.class);
    private static final String TOKEN = "outrun.mcp.token";
    private static final Duration SESSION_IDLE = Duration.ofMinutes(30);
    /**
     * The largest {@code initialize} request: a client's name, version and capabilities fit in a
     * few hundred bytes, and the SDK keeps them for the session's life (1 MB names filled a heap).
     */
    static final int MAX_INITIALIZE_BYTES = 64 << 10;
    private static final String SESSION_HEADER = "Mcp-Session-Id";

    private final Authenticator auth;
    private final HttpServletStreamableServerTransportProvider transport;
    private final McpSyncServer server;
    /**
     * The SDK's sweep closes a session idle for one to two of its intervals (and never one with an
     * open stream); this node forgets a session only after longer than that, so it never passes a
     * request on for a session it no longer knows while the SDK still holds it.
     */
    private final McpSessions sessions = new McpSessions(SESSION_IDLE.multipliedBy(2).plusMinutes(5));
    private final int maxBodyBytes;
    private final Supplier<URI> self;

    /** {@code self} is this node's own base URL, known once it listens. */
    public McpHttpEndpoint(Authenticator auth, Supplier<URI> self, int maxBodyBytes, String version) {
        this.auth = auth;
        this.maxBodyBytes = maxBodyBytes;
        this.self = self;
        McpJsonMapper mapper = McpJsonDefaults.getMapper();
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        this.transport = HttpServletStreamableServerTransportProvider.builder()
                .jsonMapper(mapper)
                .mcpEndpoint(PATH)
                .maxRequestSize(maxBodyBytes)
                // Sessions of hosts that vanished without DELETE would pile up: one idle this long
                // is closed (a host that comes back gets 404 and initializes again, as MCP says).
                .sessionSweepInterval(SESSION_IDLE)
                .contextExtractor(request -> McpTransportContext.create(Map.of(TOKEN, request.getAttribute(TOKEN))))
                .build();
        OutrunTools tools = new OutrunTools(exchange -> {
            Object token = exchange.transportContext().get(TOKEN);
            if (!(token instanceof String t)) {
                throw new IllegalStateException("an MCP call reached a tool without the filter's token");
            }
            return new OutrunClient(self.get(), t, http);
        }, mapper);
        this.server = tools.serve(McpServer.sync(transport), version);
    }

    /** Adds the servlet and its auth filter to Javalin's servlet context. */
    public void mount(ServletContextHandler context) {
        ServletHolder servlet = new ServletHolder("outrun-mcp", transport);
        servlet.setAsyncSupported(true);
        context.addServlet(servlet, PATH);
        FilterHolder filter = new FilterHolder(new BearerFilter());
        filter.setAsyncSupported(true);
        context.addFilter(filter, PATH, EnumSet.of(DispatcherType.REQUEST));
    }

    @Override
    public void close() {
        try {
            server.closeGracefully();
        } catch (RuntimeException e) {
            LOG.warn("closing the MCP server: {}", e.toString());
        }
    }

    /** The same token check as {@code /v1}, answering in the API's error shape. */
    private final class BearerFilter implements Filter {
        @Override
        public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain) throws IOException, ServletException {
            HttpServletRequest request = (HttpServletRequest) req;
            HttpServletResponse response = (HttpServletResponse) res;
            String origin = request.getHeader("Origin");
            if (origin != null && !allowedOrigin(origin, self.get())) {
                write(response, 403, ErrorBody.of("origin_not_allowed", "Requests from web origin " + clip(origin)
                        + " are refused.", "MCP over HTTP takes browser requests only from this node's own address or"
                        + " from localhost (a page elsewhere could reach a local node through DNS rebinding);"
                        + " agents and hosts that send no Origin header are not affected."));
                return;
            }
            String header = request.getHeader("Authorization");
            if (header == null || header.isBlank()) {
                deny(response, "This endpoint needs an owner identity: no Authorization header was sent.");
                return;
            }
            Optional<String> owner;
            try {
                owner = auth.owner(header);
            } catch (RuntimeException e) {
                if (!Outage.is(e)) {
                    throw e;
                }
                response.setHeader("Retry-After", "5");
                write(response, 503, ErrorBody.of("database_unavailable", "This node cannot reach its database right now.",
                        "Retry in a few seconds (see Retry-After)."));
                return;
            }
            if (owner.isEmpty()) {
                deny(response, "The bearer token is malformed, unknown or revoked.");
                return;
            }
            String token = header.strip();
            if (token.regionMatches(true, 0, "Bearer ", 0, 7)) {
                token = token.substring(7).strip();
            }
            request.setAttribute(TOKEN, token);
            String sessionId = request.getHeader(SESSION_HEADER);
            ServletRequest forward = req;
            if ("POST".equals(request.getMethod())) {
                // Without a session only an initialize is valid, and that is small: refuse a large
                // one before reading it.
                long length = request.getContentLengthLong();
                if (length > maxBodyBytes || (sessionId == null && length > MAX_INITIALIZE_BYTES)) {
                    tooLarge(response, sessionId == null ? MAX_INITIALIZE_BYTES : maxBodyBytes);
                    return;
                }
                // Read whole, as the SDK reads it: an initialize opens a session whatever session
                // header it carries, so it is told by its body, never by the header.
                byte[] body = request.getInputStream().readNBytes(maxBodyBytes + 1);
                if (body.length > maxBodyBytes) {
                    tooLarge(response, maxBodyBytes);
                    return;
                }
                if (isInitialize(body)) {
                    initialize(new BufferedRequest(request, body), response, chain, owner.get(), body.length);
                    return;
                }
                forward = new BufferedRequest(request, body);
            }
            if (sessionId != null) {
                String holder = sessions.use(sessionId);
                if (holder == null || !holder.equals(owner.get())) {
                    // Unknown here, or another owner's: the same answer, which reveals nothing.
                    write(response, 404, ErrorBody.of("session_not_found", "No MCP session " + clip(sessionId)
                            + " on this node.", "Initialize a new session: send initialize without an Mcp-Session-Id."));
                    return;
                }
                forward(chain, forward, response);
                if ("DELETE".equals(request.getMethod()) || response.getStatus() == 404) {
                    sessions.closed(sessionId);
                }
                return;
            }
            forward(chain, forward, response); // no session: the SDK answers as MCP says
        }

        /** Passes the request to the SDK, its error answers made plain JSON-RPC errors (see {@link PlainErrors}). */
        private void forward(FilterChain chain, ServletRequest request, HttpServletResponse response)
                throws IOException, ServletException {
            PlainErrors plain = new PlainErrors(response);
            chain.doFilter(request, plain);
            plain.finish();
        }

        private boolean isInitialize(byte[] body) {
            // Every tool call passes here: parse only a body that names the method at all.
            if (!new String(body, StandardCharsets.ISO_8859_1).contains("\"initialize\"")) {
                return false;
            }
            try {
                JsonNode message = Json.mapper().readTree(body);
                if (message != null && message.isArray()) {
                    for (JsonNode m : message) {
                        if ("initialize".equals(m.path("method").asText())) {
                            return true;
                        }
                    }
                    return false;
                }
                return message != null && "initialize".equals(message.path("method").asText());
            } catch (IOException notJson) {
                return false; // the SDK answers a parse error
            }
        }

        /** An {@code initialize}: bounded in size and in sessions per owner, its session bound to the owner. */
        private void initialize(HttpServletRequest request, HttpServletResponse response, FilterChain chain, String owner,
                                int bytes) throws IOException, ServletException {
            if (bytes > MAX_INITIALIZE_BYTES) {
                tooLarge(response, MAX_INITIALIZE_BYTES);
                return;
            }
            if (!sessions.reserve(owner)) {
                response.setHeader("Retry-After", "60");
                write(response, 429, ErrorBody.of("too_many_sessions", "Owner " + owner + " already holds "
                        + McpSessions.MAX_PER_OWNER + " MCP sessions on this node.", "Close sessions you no longer use"
                        + " (DELETE /mcp with their Mcp-Session-Id), or reuse one; an idle session stops counting after "
                        + (SESSION_IDLE.toMinutes() * 2 + 5) + " minutes."));
                return;
            }
            // Registered when the SDK sets the header, before the answer leaves: a client that
            // deletes the session at once then finds it known.
            AtomicBoolean opened = new AtomicBoolean();
            HttpServletResponse watched = new HttpServletResponseWrapper(response) {
                @Override
                public void setHeader(String name, String value) {
                    seen(name, value);
                    super.setHeader(name, value);
                }

                @Override
                public void addHeader(String name, String value) {
                    seen(name, value);
                    super.addHeader(name, value);
                }

                private void seen(String name, String value) {
                    if (SESSION_HEADER.equalsIgnoreCase(name) && value != null && opened.compareAndSet(false, true)) {
                        sessions.opened(owner, value);
                    }
                }
            };
            try {
                forward(chain, request, watched);
            } finally {
                if (!opened.get()) {
                    sessions.notOpened(owner);
                }
            }
        }

        private void tooLarge(HttpServletResponse response, int limit) throws IOException {
            response.setHeader("Connection", "close");
            write(response, 413, limit == MAX_INITIALIZE_BYTES
                    ? ErrorBody.of("request_too_large", "An MCP initialize request may carry at most "
                            + MAX_INITIALIZE_BYTES + " bytes.", "Send a short clientInfo (name and version) and only the"
                            + " capabilities the client has.")
                    : ErrorBody.of("request_too_large", "An MCP request may carry at most " + limit + " bytes.",
                            "Send fewer or smaller files in one call: put large inputs in a workspace."));
        }

        /**
         * The MCP spec's guard against DNS rebinding: a browser page may call only from the node's
         * own origin or from a loopback origin (a local inspector), never from a page of some
         * other site whose name was made to resolve to this node.
         */
        static boolean allowedOrigin(String origin, URI self) {
            URI uri;
            try {
                uri = URI.create(origin);
            } catch (IllegalArgumentException e) {
                return false;
            }
            if (uri.getHost() == null || !("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))) {
                return false;
            }
            String name = uri.getHost();
            if (name.equals("localhost") || name.equals("127.0.0.1") || name.equals("[::1]")) {
                return true;
            }
            // Never the Host header: under DNS rebinding the attacker's page sends its own name in both.
            return self != null && uri.getRawAuthority().equalsIgnoreCase(self.getRawAuthority());
        }

        private static String clip(String text) {
            return text.length() > 80 ? text.substring(0, 80) + "…" : text;
        }

        private void deny(HttpServletResponse response, String why) throws IOException {
            response.setHeader("WWW-Authenticate", "Bearer");
            write(response, 401, ErrorBody.of("identity_required", why, "Send Authorization: Bearer <token>, the same"
                    + " token as for /v1 (`outrun token create --owner NAME`; under `outrun dev`, .outrun/dev-token)."));
        }

        private void write(HttpServletResponse response, int status, ErrorBody body) throws IOException {
            response.setStatus(status);
            response.setContentType("application/json");
            response.getOutputStream().write(Json.mapper().writeValueAsBytes(body));
        }
    }

    /** A request whose body was read already (to bound it), served again from memory to the SDK. */
    private static final class BufferedRequest extends HttpServletRequestWrapper {
        private final byte[] body;

        BufferedRequest(HttpServletRequest request, byte[] body) {
            super(request);
            this.body = body;
        }

        @Override
        public ServletInputStream getInputStream() {
            ByteArrayInputStream in = new ByteArrayInputStream(body);
            return new ServletInputStream() {
                @Override
                public int read() {
                    return in.read();
                }

                @Override
                public int read(byte[] b, int off, int len) {
                    return in.read(b, off, len);
                }

                @Override
                public boolean isFinished() {
                    return in.available() == 0;
                }

                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setReadListener(ReadListener listener) {
                    throw new UnsupportedOperationException("a buffered body is read blocking");
                }
            };
        }

        @Override
        public BufferedReader getReader() {
            String charset = getCharacterEncoding() == null ? "UTF-8" : getCharacterEncoding();
            return new BufferedReader(new InputStreamReader(getInputStream(),
                    Charset.forName(charset)));
        }

        @Override
        public int getContentLength() {
            return body.length;
        }

        @Override
        public long getContentLengthLong() {
            return body.length;
        }
    }
}
