package io.outrun.core.notify;

import io.outrun.core.store.Database;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.core.store.DatabaseHosts;
import io.outrun.core.store.Outage;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.core.BaseConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's one direct connection to PostgreSQL: it LISTENs on Outrun's channels and hands each
 * notification's payload to its handler, and between notifications runs the node's periodic
 * work that must not wait for a pooled connection (a worker's heartbeat and output flush). Every
 * statement on it is bounded (see {@link Database#dedicated}). Reconnects after a database
 * restart, a failover (the URL names several hosts: the new connection goes to whichever is the
 * primary now, see {@link DatabaseHosts}) or a failed tick, and LISTENs again on every channel. A
 * notification sent while disconnected is lost; every consumer has a slower fallback (JobRunr's
 * poll, the heartbeat, a re-check), and {@link #onReconnect} catches up at once what a lost one
 * would have said.
 */
public final class Listener implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Listener.class);

    private final DatabaseConfig config;
    private final Map<String, Consumer<String>> handlers = new ConcurrentHashMap<>();
    private final List<DueTick> ticks = new CopyOnWriteArrayList<>();
    private final String name;
    private volatile long timeoutMs = 10_000;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Connection connection;
    private final List<Runnable> catchUps = new CopyOnWriteArrayList<>();
    /** Null while connected and LISTENing; else why not, for a readiness answer. */
    private volatile String down = "not connected to PostgreSQL yet";
    /** {@code host:port} of the server this connection LISTENs on, once it does. */
    private volatile String server;
    private static final long WARN_EVERY_NANOS = 30_000_000_000L;
    /** When a lost connection was last warned of; the first loss is always warned of. */
    private long lastWarnNanos = System.nanoTime() - WARN_EVERY_NANOS - 1;

    public Listener(DatabaseConfig config, String name) {
        this.config = config;
        this.name = name;
        this.thread = new Thread(this::loop, "outrun-listener-" + name);
        this.thread.setDaemon(true);
    }

    /** Registers a handler; call before {@link #start()}. Handlers run on the listener thread: keep them short. */
    public Listener on(String channel, Consumer<String> handler) {
        handlers.put(channel, handler);
        return this;
    }

    /** Work run on this connection on the listener thread, as a database statement or a few. */
    @FunctionalInterface
    public interface Tick {
        void run(Connection connection) throws SQLException;
    }

    private static final class DueTick {
        final long periodNanos;
        final Tick tick;
        long dueNanos;

        DueTick(long periodNanos, Tick tick) {
            this.periodNanos = periodNanos;
            this.tick = tick;
            this.dueNanos = System.nanoTime(); // at once: a node is known to the fleet from its start
        }
    }

    /**
     * Runs {@code tick} every {@code period} on this connection; call before {@link #start()}. A
     * tick that throws drops the connection (a fresh one is made at once).
     *
     * @param statementTimeout the bound of every statement on this connection (the smallest given wins)
     */
    public Listener every(Duration period, Duration statementTimeout, Tick tick) {
        ticks.add(new DueTick(period.toNanos(), tick));
        timeoutMs = Math.min(timeoutMs, statementTimeout.toMillis());
        return this;
    }

    /**
     * Runs {@code catchUp} on the listener thread each time the connection is back and LISTENing
     * again (not at the first connect): it does at once what a notification lost meanwhile would
     * have asked (a worker looks for queued work). Call before {@link #start()}.
     */
    public Listener onReconnect(Runnable catchUp) {
        catchUps.add(catchUp);
        return this;
    }

    /** Null while the connection is up and LISTENing; else why it is not, e.g. no primary answers during a failover. */
    public String down() {
        return down;
    }

    /** {@code host:port} of the server LISTENed on now, or null while down. */
    public String server() {
        return down == null ? server : null;
    }

    public Listener start() {
        thread.start();
        return this;
    }

    private void loop() {
        boolean reconnect = false;
        String lostOn = null;
        while (running) {
            try (Connection c = Database.dedicated(config, name, timeoutMs)) {
                connection = c;
                try (Statement st = c.createStatement()) {
                    for (String channel : handlers.keySet()) {
                        // LISTEN takes no bind parameter (a utility statement): the one SQL that
                        // names its channel in the text; a channel is a Channels constant or a
                        // node's own wake channel, never a user's input.
                        st.execute("LISTEN " + channel);
                    }
                }
                server = serverOf(c);
                down = null;
                if (reconnect) {
                    LOG.info("the node's direct connection is back, LISTENing on {}{}", server,
                            lostOn != null && !lostOn.equals(server) ? " (it was on " + lostOn + ": a failover)" : "");
                    catchUp();
                }
                reconnect = true;
                lostOn = server;
                PGConnection pg = c.unwrap(PGConnection.class);
                while (running) {
                    long now = System.nanoTime();
                    long waitMs = 1000;
                    for (DueTick p : ticks) {
                        waitMs = Math.min(waitMs, Math.max(0, (p.dueNanos - now) / 1_000_000));
                    }
                    // getNotifications(0) would block until a notification: wait at least 1 ms.
                    PGNotification[] batch = pg.getNotifications((int) Math.max(1, waitMs));
                    if (batch != null) {
                        for (PGNotification n : batch) {
                            dispatch(n);
                        }
                    }
                    for (DueTick p : ticks) {
                        if (System.nanoTime() - p.dueNanos >= 0) {
                            p.dueNanos = System.nanoTime() + p.periodNanos;
                            p.tick.run(c);
                        }
                    }
                }
            } catch (SQLException | RuntimeException e) {
                if (running) {
                    DatabaseHosts hosts = DatabaseHosts.of(config.directUrl());
                    boolean wasUp = down == null;
                    down = !Outage.is(e) ? "the node's direct connection failed (" + e.getMessage() + ")"
                            : hosts.several() ? hosts.unreachable() : hosts.unreachable() + " (" + e.getMessage() + ")";
                    // Once when it is lost, then every 30 s: a failover retries 5 times a second.
                    long now = System.nanoTime();
                    if (wasUp || now - lastWarnNanos > WARN_EVERY_NANOS) {
                        lastWarnNanos = now;
                        LOG.warn("the node's direct connection failed ({}); reconnecting", e.getMessage());
                    } else {
                        LOG.debug("the node's direct connection is still down ({}); reconnecting", e.getMessage());
                    }
                    sleepQuietly(ticks.isEmpty() ? 1000 : 200);
                }
            }
        }
    }

    private void catchUp() {
        for (Runnable r : catchUps) {
            try {
                r.run();
            } catch (RuntimeException e) {
                LOG.warn("catching up after a reconnect failed", e);
            }
        }
    }

    /** {@code host:port} of the server {@code c} reached (with several hosts, the one that is the primary). */
    private static String serverOf(Connection c) {
        try {
            var host = c.unwrap(BaseConnection.class).getQueryExecutor().getHostSpec();
            return host.getHost() + ":" + host.getPort();
        } catch (SQLException | RuntimeException e) {
            return "?";
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
