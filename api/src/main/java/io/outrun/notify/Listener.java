package io.outrun.notify;

import io.outrun.store.Database;
import io.outrun.store.DatabaseConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One dedicated connection per node that LISTENs on Outrun's channels and hands each
 * notification's payload to its handler. Reconnects after a database restart; a notification
 * sent while disconnected is lost, which only costs latency: every consumer has a slower
 * fallback (JobRunr's poll, the heartbeat, a periodic re-check).
 */
public final class Listener implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Listener.class);

    private final DatabaseConfig config;
    private final Map<String, Consumer<String>> handlers = new ConcurrentHashMap<>();
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Connection connection;

    public Listener(DatabaseConfig config, String name) {
        this.config = config;
        this.thread = new Thread(this::loop, "outrun-listener-" + name);
        this.thread.setDaemon(true);
    }

    /** Registers a handler; call before {@link #start()}. Handlers run on the listener thread: keep them short. */
    public Listener on(String channel, Consumer<String> handler) {
        handlers.put(channel, handler);
        return this;
    }

    public Listener start() {
        thread.start();
        return this;
    }

    private void loop() {
        while (running) {
            try (Connection c = Database.dedicated(config)) {
                connection = c;
                try (Statement st = c.createStatement()) {
                    for (String channel : handlers.keySet()) {
                        st.execute("LISTEN " + channel);
                    }
                }
                PGConnection pg = c.unwrap(PGConnection.class);
                while (running) {
                    PGNotification[] batch = pg.getNotifications(1000);
                    if (batch == null) {
                        continue;
                    }
                    for (PGNotification n : batch) {
                        dispatch(n);
                    }
                }
            } catch (SQLException e) {
                if (running) {
                    LOG.warn("listener lost its connection ({}); reconnecting in 1 s", e.getMessage());
                    sleepQuietly(1000);
                }
            }
        }
    }

    private void dispatch(PGNotification n) {
        Consumer<String> handler = handlers.get(n.getName());
        if (handler == null) {
            return;
        }
        try {
            handler.accept(n.getParameter());
        } catch (RuntimeException e) {
            LOG.warn("handler of {} failed", n.getName(), e);
        }
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        running = false;
        Connection c = connection;
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // Closing is best effort: the thread exits on its own.
            }
        }
        thread.interrupt();
        try {
            thread.join(3000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
