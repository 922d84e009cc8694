package io.outrun.worker.lease;

import io.outrun.core.store.ExecutionRows;
import io.outrun.core.store.Lease;
import io.outrun.core.store.Outcome;
import io.outrun.core.store.StoreException;
import io.outrun.worker.lease.EndsStatement.Answer;
import io.outrun.worker.lease.EndsStatement.End;
import io.outrun.worker.lease.EndsStatement.Key;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * The node's ends, written together as the heartbeat renews all its leases in one statement: a
 * group write, with no added delay. An end that finds no write in flight is written at once, by
 * its own thread; ends that arrive while one is in flight wait, and the next write takes them all
 * (up to {@link #MAX_ENDS}) in one statement ({@link EndsStatement}), written by one of their
 * threads (the leader; the others follow and wake with their answers). At low load each end is
 * one statement as before; under load a node pays one statement for a burst of ends.
 *
 * <p>Fencing is per end, as for a lone end: a lost lease answers {@code written} false to its
 * caller only. A database failure fails every end of that write, each with its own {@link
 * StoreException}, exactly as a lone end's failure (the caller's retry through an outage is
 * unchanged). A deadlock or serialization failure rolled the statement back whole: it is sent
 * again. An end whose row another write holds locked (answered busy) goes to the next write,
 * after a short pause, for at most {@link ExecutionRows#WRITE_TIMEOUT_S}, the time a lone end
 * would have waited on that lock before its statement was cancelled.
 */
final class EndBatch {

    /** Ends in one statement at most (its arrays stay small, its locks few). */
    static final int MAX_ENDS = 64;
    private static final int RESENDS = 3;
    private static final long BUSY_PAUSE_MAX_MS = 50;

    private final DataSource dataSource;
    private final Object lock = new Object();
    /** Ends not written yet, oldest first; guarded by {@link #lock}. */
    private final ArrayDeque<Waiter> queue = new ArrayDeque<>();
    /** Whether a thread leads (writes); guarded by {@link #lock}. */
    private boolean writing;
    private final AtomicLong statements = new AtomicLong();

    EndBatch(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** One caller's end, and what became of it. Fields other than {@code end} are guarded by the batch's lock. */
    private static final class Waiter {
        final End end;
        boolean leads;
        boolean done;
        LeaseStore.Finish result;
        RuntimeException failure;
        long busySinceNanos;
        int busyTimes;
        long notBeforeNanos;

        Waiter(End end) {
            this.end = end;
        }
    }

    /** Writes one end with whatever other ends of this node are being written now; blocks until it is. */
    LeaseStore.Finish finish(Lease lease, Outcome outcome, Integer defaultMaxRunning) {
        Waiter mine = new Waiter(new End(lease, outcome, defaultMaxRunning));
        boolean interrupted = false;
        synchronized (lock) {
            queue.addLast(mine);
            if (!writing) {
                writing = true;
                mine.leads = true;
            } else {
                lock.notifyAll(); // a leader pausing for busy ends takes this one at once
            }
            // Uninterruptible, as a lone end's JDBC call is: the end is in the queue and gets written.
            while (!mine.done && !mine.leads) {
                try {
                    lock.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        try {
            while (!mine.done) {
                interrupted |= lead();
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        if (mine.failure != null) {
            throw mine.failure;
        }
        return mine.result;
    }

    /** Statements sent so far (for tests and figures). */
    long statements() {
        return statements.get();
    }

    /**
     * One write by the leader: takes what is due from the queue, writes it, and then leads on
     * while its own end is not written, or hands the lead to the oldest end left, or stops.
     *
     * @return true when an interrupt came while pausing
     */
    private boolean lead() {
        List<Waiter> batch = new ArrayList<>();
        synchronized (lock) {
            long now = System.nanoTime();
            Set<Key> keys = new HashSet<>();
            long earliest = Long.MAX_VALUE;
            for (Iterator<Waiter> it = queue.iterator(); it.hasNext() && batch.size() < MAX_ENDS; ) {
                Waiter w = it.next();
                if (w.busyTimes > 0 && w.notBeforeNanos - now > 0) {
                    earliest = Math.min(earliest, w.notBeforeNanos - now);
                } else if (keys.add(w.end.key())) { // the same run twice: the second goes next time
                    batch.add(w);
                    it.remove();
                }
            }
            if (batch.isEmpty()) {
                // Only busy ends, not due yet: wait for the first, or for a new end (which notifies).
                try {
                    TimeUnit.NANOSECONDS.timedWait(lock, earliest == Long.MAX_VALUE ? 100_000 : earliest);
                } catch (InterruptedException e) {
                    return true;
                }
                return false;
            }
        }
        try {
            write(batch);
        } catch (RuntimeException | Error e) {
            for (Waiter w : batch) {
                w.failure = e instanceof RuntimeException r ? r
                        : new StoreException("cannot finish execution " + w.end.lease().executionId(), e);
            }
        } finally {
            synchronized (lock) {
                List<Waiter> again = new ArrayList<>();
                for (Waiter w : batch) {
                    if (w.result != null || w.failure != null) {
                        w.done = true;
                    } else {
                        again.add(w);
                    }
                }
                for (int i = again.size() - 1; i >= 0; i--) {
                    queue.addFirst(again.get(i));
                }
                Waiter self = null;
                for (Waiter w : batch) {
                    if (w.leads) {
                        self = w;
                    }
                }
                if (self != null && self.done) {
                    self.leads = false;
                    if (queue.isEmpty()) {
                        writing = false;
                    } else {
                        queue.peekFirst().leads = true;
                    }
                }
                lock.notifyAll();
            }
        }
        return false;
    }

    /**
     * Sends the statement for {@code batch} and sets each end's answer; a busy end gets none (it
     * goes back to the queue) unless it has been busy too long.
     */
    private void write(List<Waiter> batch) {
        List<End> ends = batch.stream().map(w -> w.end).toList();
        Map<Key, Answer> answers = null;
        for (int sent = 1; answers == null; sent++) {
            statements.incrementAndGet();
            try (Connection c = dataSource.getConnection()) {
                answers = EndsStatement.write(c, ends);
            } catch (SQLException e) {
                if (sent <= RESENDS && rolledBackWhole(e)) {
                    continue;
                }
                for (Waiter w : batch) {
                    w.failure = new StoreException("cannot finish execution " + w.end.lease().executionId(), e);
                }
                return;
            }
        }
        long now = System.nanoTime();
        for (Waiter w : batch) {
            Answer a = answers.getOrDefault(w.end.key(), Answer.LOST);
            switch (a.state()) {
                case ENDED -> w.result = new LeaseStore.Finish(true, a.ownerQueued());
                case LOST -> w.result = new LeaseStore.Finish(false, false);
                case BUSY -> {
                    if (w.busyTimes == 0) {
                        w.busySinceNanos = now;
                    } else if (now - w.busySinceNanos > TimeUnit.SECONDS.toNanos(ExecutionRows.WRITE_TIMEOUT_S)) {
                        w.failure = new StoreException("cannot finish execution " + w.end.lease().executionId()
                                + ": another write held its row for over " + ExecutionRows.WRITE_TIMEOUT_S + " s", null);
                        continue;
                    }
                    w.notBeforeNanos = now + TimeUnit.MILLISECONDS.toNanos(Math.min(1L << Math.min(w.busyTimes, 6),
                            BUSY_PAUSE_MAX_MS));
                    w.busyTimes++;
                }
                default -> throw new IllegalStateException(a.state().name());
            }
        }
    }

    /** A deadlock or serialization failure: PostgreSQL rolled the statement back whole, so it may be sent again. */
    private static boolean rolledBackWhole(SQLException e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLException sql && ("40P01".equals(sql.getSQLState()) || "40001".equals(sql.getSQLState()))) {
                return true;
            }
        }
        return false;
    }
}
