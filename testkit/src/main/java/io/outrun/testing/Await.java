package io.outrun.testing;

import java.time.Duration;
import java.util.function.Supplier;

/** Polls a condition until it holds or a deadline passes; never a fixed sleep. */
public final class Await {
    private Await() {
    }

    public static <T> T until(String what, Duration within, Supplier<T> probe) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        while (true) {
            T value = probe.get();
            if (value != null && !Boolean.FALSE.equals(value)) {
                return value;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + within + " waiting for " + what);
            }
            Thread.sleep(50);
        }
    }
}
