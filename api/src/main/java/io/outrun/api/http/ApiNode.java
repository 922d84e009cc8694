package io.outrun.api.http;

import io.outrun.api.auth.Authenticator;
import io.outrun.api.auth.TokenStore;
import io.outrun.core.notify.ChangeSignal;
import io.outrun.core.notify.Listener;
import io.outrun.core.service.Core;
import io.outrun.core.store.Channels;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The API role of a node on a shared {@link Core}: the HTTP server, its token lookups, and the
 * LISTEN connection that wakes long polls when workers report new output or an end.
 */
public final class ApiNode implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ApiNode.class);

    private final Listener listener;
    private final ApiServer server;

    private ApiNode(Listener listener, ApiServer server) {
        this.listener = listener;
        this.server = server;
    }

    public static ApiNode start(Core core, ApiConfig config, String name) {
        LOG.info("api config: {}", config);
        ChangeSignal signal = new ChangeSignal();
        Listener listener = new Listener(core.config(), name + "-api")
                .on(Channels.CHANGED, signal::onNotification)
                .start();
        try {
            Authenticator auth = new Authenticator(new TokenStore(core.pool()));
            return new ApiNode(listener, ApiServer.start(config, core.service(), core.pool(), auth, signal));
        } catch (RuntimeException e) {
            listener.close();
            throw e;
        }
    }

    public int port() {
        return server.port();
    }

    public ApiServer server() {
        return server;
    }

    @Override
    public void close() {
        try {
            server.close();
        } finally {
            listener.close();
        }
    }
}
