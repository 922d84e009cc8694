package io.outrun.sandbox.docker;

import com.github.dockerjava.api.model.Event;
import com.github.dockerjava.api.model.EventType;
import java.io.Closeable;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's own account of who ended this node's containers, and whether the engine is there.
 *
 * <p>One event stream per node ({@code kill}, {@code die}, {@code oom} of containers labelled
 * with this node's id) kept open on a daemon thread and re-opened whenever it ends. Why events:
 * an exit code cannot tell a command that sent itself SIGTERM from a {@code docker stop} or an
 * engine shutting down (both exit 143); the engine announces each kill it sends, with its signal,
 * before the container dies. Outrun itself only ever sends SIGKILL, and only after
 * {@link DockerRun#kill} recorded that it asked.
 *
 * <p>An engine that shuts down stops its containers exactly like {@code docker stop} (a
 * {@code kill} event with signal 15) and then closes its API: the stream ending right after such
 * a kill is what tells the two apart. While the stream is down the engine counts as away
 * ({@link #connected()}), the figure behind the node's engine metric.
 */
final class EngineWatch implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(EngineWatch.class);

    /** How long a run's end waits for the engine's die event (it travels on another connection). */
    static final long DIE_WAIT_MILLIS = 2000;
    /** How long after a foreign kill the stream must end for the kill to be the engine's shutdown. */
    static final long SHUTDOWN_WAIT_MILLIS = 5000;
    private static final long RECONNECT_MILLIS = 500;

    private final DockerClients clients;
    private final String nodeId;
    private final Map<String, Seen> seen = new ConcurrentHashMap<>();
    private final Object changed = new Object();
    private final Thread thread;
    private volatile boolean connected;
    private volatile boolean closed;
    /** How many times the stream was lost: a run compares it at its start and at its end. */
    private volatile long losses;
    /** Seconds (engine time) of the last event seen: a re-opened stream replays from there. */
    private volatile long lastEventSeconds;
    private volatile Stream current;

    /** What the engine said about one container. */
    static final class Seen {
        final List<Integer> killSignals = new ArrayList<>();
        final Set<Long> eventTimes = new HashSet<>();
        Integer dieExit;
        boolean oom;
        /** {@link #losses} when the first kill arrived. */
        long lossesAtKill = -1;

        synchronized List<Integer> kills() {
            return List.copyOf(killSignals);
        }
    }

    /** Who ended a container, as far as the engine's events tell. */
    record Verdict(boolean lost, String why) {
        static final Verdict COMMAND = new Verdict(false, null);
    }

    EngineWatch(DockerClients clients, String nodeId) {
        this.clients = clients;
        this.nodeId = nodeId;
        this.thread = new Thread(this::loop, "outrun-engine-events");
        thread.setDaemon(true);
        thread.start();
    }

    /** True while the event stream is open: the engine answers. */
    boolean connected() {
        return connected;
    }

    long losses() {
        return losses;
    }

    /** Waits (bounded) until the stream is open; true when it is. */
    boolean awaitConnected(long millis) throws InterruptedException {
        return waitFor(() -> connected, millis);
    }

    /** Starts keeping the events of a container (before it starts: its kills must not be missed). */
    void track(String containerId) {
        seen.putIfAbsent(containerId, new Seen());
    }

    /** Whether the engine reported an OOM kill inside the container (any of its processes). */
    boolean sawOom(String containerId) {
        Seen s = seen.get(containerId);
        if (s == null) {
            return false;
        }
        synchronized (s) {
            return s.oom;
        }
    }

    void untrack(String containerId) {
        seen.remove(containerId);
    }

    /**
     * Decides who ended a container that exited with {@code exitCode}, which Outrun did not ask to
     * kill. {@code lossesAtStart}: {@link #losses()} when the run started; {@code endSeenLive}:
     * false when the exit was only learnt by asking the engine after its connection was lost.
     */
    Verdict verdict(String containerId, int exitCode, long lossesAtStart, boolean endSeenLive, String host)
            throws InterruptedException {
        Seen s = seen.get(containerId);
        if (s == null) {
            return Verdict.COMMAND;
        }
        if (!endSeenLive && losses != lossesAtStart) {
            // Its end was learnt only by asking the engine after it came back. An engine that comes
            // back without live-restore stops the containers it finds running (its kill events then
            // replay into the re-opened stream); a command's own exit codes stay the command's.
            List<Integer> kills = s.kills();
            if (!kills.isEmpty() || (exitCode > 128 && exitCode < 160)) {
                int signal = kills.isEmpty() ? exitCode - 128 : kills.get(0);
                return new Verdict(true, "the Docker engine at " + host + " went away while the command ran (a"
                        + " restart or a crash) and its container ended by signal " + signal);
            }
            return Verdict.COMMAND;
        }
        long lossesNow = losses;
        // The die event follows every kill event; wait for it unless the stream is gone.
        waitFor(() -> s.dieExit != null || !connected || losses != lossesNow, DIE_WAIT_MILLIS);
        List<Integer> kills = s.kills();
        if (!kills.isEmpty()) {
            int signal = kills.get(0);
            long lossesAtKill = s.lossesAtKill;
            boolean engineLeft = waitFor(() -> losses != lossesAtKill, SHUTDOWN_WAIT_MILLIS);
            if (engineLeft) {
                return new Verdict(true, "the Docker engine at " + host + " shut down (a restart or an upgrade) while"
                        + " the command ran and stopped its container (signal " + signal + ")");
            }
            return new Verdict(true, "the container was stopped outside Outrun (a `docker stop`, `docker kill` or"
                    + " `docker rm -f` by an operator or another program; signal " + signal + ")");
        }
        if (losses != lossesAtStart && s.dieExit == null && exitCode > 128 && exitCode < 160) {
            // Nobody was watching when it ended by a signal: the engine going away is the likely cause.
            return new Verdict(true, "the Docker engine at " + host + " went away while the command ran (a restart or"
                    + " a crash) and its container ended by signal " + (exitCode - 128));
        }
        return Verdict.COMMAND;
    }

    private boolean waitFor(BooleanSupplier condition, long millis) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        synchronized (changed) {
            while (!condition.getAsBoolean()) {
                long left = TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime());
                if (left <= 0) {
                    return false;
                }
                changed.wait(Math.min(left, 100));
            }
            return true;
        }
    }

    private void signal() {
        synchronized (changed) {
            changed.notifyAll();
        }
    }

    private void loop() {
        while (!closed) {
            Stream stream = new Stream();
            try {
                var cmd = clients.streams.eventsCmd()
                        .withEventTypeFilter(EventType.CONTAINER)
                        .withEventFilter("kill", "die", "oom")
                        .withLabelFilter(Map.of(ContainerRecipe.LABEL_NODE, nodeId));
                if (lastEventSeconds > 0) {
                    cmd = cmd.withSince(Long.toString(lastEventSeconds));
                }
                current = stream;
                cmd.exec(stream);
                if (stream.opened.await(10, TimeUnit.SECONDS) && !stream.ended()) {
                    if (!connected) {
                        log.info("the Docker engine answers; watching its container events");
                    }
                    connected = true;
                    signal();
                    stream.awaitEnded();
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                log.debug("opening the engine's event stream failed", e);
            } finally {
                stream.closeQuietly();
            }
            if (closed) {
                return;
            }
            if (connected) {
                connected = false;
                losses++;
                log.warn("lost the Docker engine's event stream; the engine counts as away until it answers again");
                signal();
            }
            try {
                Thread.sleep(RECONNECT_MILLIS);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private void onEvent(Event event) {
        if (event.getTime() != null) {
            lastEventSeconds = Math.max(lastEventSeconds, event.getTime());
        }
        Seen s = event.getId() == null ? null : seen.get(event.getId());
        if (s == null) {
            return;
        }
        Map<String, String> attributes = event.getActor() == null || event.getActor().getAttributes() == null
                ? Map.of() : event.getActor().getAttributes();
        String action = event.getAction() != null ? event.getAction() : event.getStatus();
        synchronized (s) {
            Long time = event.getTimeNano();
            if (time != null && !s.eventTimes.add(time * 31 + (action == null ? 0 : action.hashCode()))) {
                return; // replayed after a re-open
            }
            switch (action == null ? "" : action) {
                case "kill" -> {
                    if (s.killSignals.isEmpty()) {
                        s.lossesAtKill = losses;
                    }
                    s.killSignals.add(parseInt(attributes.get("signal")));
                }
                case "die" -> s.dieExit = parseInt(attributes.get("exitCode"));
                case "oom" -> s.oom = true;
                default -> {
                }
            }
        }
        signal();
    }

    private static int parseInt(String value) {
        try {
            return value == null ? -1 : Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    @Override
    public void close() {
        closed = true;
        Stream stream = current;
        if (stream != null) {
            stream.closeQuietly();
        }
        thread.interrupt();
    }

    /** One opening of the event stream. */
    private final class Stream extends StreamCallback<Event> {
        final CountDownLatch opened = new CountDownLatch(1);

        Stream() {
            super("events");
        }

        @Override
        public void onStart(Closeable stream) {
            super.onStart(stream);
            opened.countDown();
        }

        @Override
        public void onNext(Event event) {
            onEvent(event);
        }

        @Override
        public void onError(Throwable error) {
            super.onError(error);
            opened.countDown();
        }

        @Override
        public void onComplete() {
            super.onComplete();
            opened.countDown();
        }

        boolean ended() throws InterruptedException {
            return awaitEnded(0, TimeUnit.MILLISECONDS);
        }

        void awaitEnded() throws InterruptedException {
            while (!awaitEnded(1, TimeUnit.SECONDS)) {
                if (closed) {
                    return;
                }
            }
        }
    }
}
