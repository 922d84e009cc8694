package io.outrun.api.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.core.notify.ChangeSignal;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Long-poll places: one owner's flood takes its share, and another owner's wait still waits. */
class WaiterTest {

    @Test
    void oneOwnerHoldsAtMostAnEighthOfThePlaces() throws Exception {
        Waiter waiter = new Waiter(new ChangeSignal(), 16); // two places per owner
        UUID id = UUID.randomUUID();
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<?> a1 = CompletableFuture.runAsync(() -> waiter.await("alice", id, 30_000, () -> 0, v -> release.getCount() == 0));
        CompletableFuture<?> a2 = CompletableFuture.runAsync(() -> waiter.await("alice", id, 30_000, () -> 0, v -> release.getCount() == 0));
        io.outrun.testing.Await.until("alice's two waits held", java.time.Duration.ofSeconds(10), () -> waiter.waiting() == 2);

        long start = System.nanoTime();
        waiter.await("alice", id, 5_000, () -> 0, v -> false);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("alice's third answers at once").isLessThan(1_000);

        start = System.nanoTime();
        waiter.await("bob", id, 1_500, () -> 0, v -> false);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("bob still waits").isGreaterThanOrEqualTo(1_400);

        release.countDown();
        a1.get(10, TimeUnit.SECONDS);
        a2.get(10, TimeUnit.SECONDS);
        assertThat(waiter.waiting()).isZero();
    }
}
