package io.outrun.http;

import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;

/**
 * Answers "can this node reach its database?" within a bound. A pool checkout waits up to the
 * pool's connection timeout (10 s) when the database is down, longer than a load balancer waits
 * for a health check; here the check runs on its own thread and counts as failed after
 * {@code within}. Concurrent checks share the one in flight, so a flood of health probes against
 * a dead database costs one thread, not one per probe.
 */
final class HealthCheck implements AutoCloseable {

    static final Duration DEFAULT_WITHIN = Duration.ofSeconds(3);

    private final DataSource dataSource;
    private final Duration within;
    private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "outrun-health");
        t.setDaemon(true);
        return t;
    });
    private final AtomicReference<CompletableFuture<Boolean>> inFlight = new AtomicReference<>();

    HealthCheck(DataSource dataSource, Duration within) {
        this.dataSource = dataSource;
        this.within = within;
    }

    boolean databaseReachable() {
        CompletableFuture<Boolean> check = inFlight.get();
        if (check == null || check.isDone()) {
            CompletableFuture<Boolean> fresh = new CompletableFuture<>();
            if (inFlight.compareAndSet(check, fresh)) {
                thread.execute(() -> {
                    boolean reachable = false;
                    try {
                        reachable = probe();
                    } finally {
                        fresh.complete(reachable); // whatever happened, the next check probes anew
                    }
                });
                check = fresh;
            } else {
                check = inFlight.get();
            }
        }
        try {
            return check.get(within.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private boolean probe() {
        try (Connection c = dataSource.getConnection()) {
            return c.isValid((int) Math.max(1, within.toSeconds()));
        } catch (Exception e) {
            return false;
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
