package io.outrun.sandbox.docker;

import io.outrun.sandbox.RunSpec;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;

/**
 * A worker JVM for {@link DockerLeftoversIT}: starts one long run, prints its execution id, and
 * waits to be SIGKILLed without ever closing anything. With a second argument (an incarnation),
 * it first fills a warm pool of two, so the run takes a pooled container and one more waits.
 */
public final class AbandonedWorker {

    public static void main(String[] args) throws InterruptedException {
        String node = args[0];
        DockerSandbox sandbox = new DockerSandbox(DockerSandboxConfig.defaults(node));
        if (args.length > 1) {
            // Pooled: a warm pool of two for incarnation args[1], full before the run takes one.
            sandbox.withPoolSize(2).prepare(new io.outrun.sandbox.Sandbox.NodeShape(args[1], io.outrun.sandbox.Limits.DEFAULTS,
                    2, java.nio.file.Path.of(System.getProperty("java.io.tmpdir"))));
            io.outrun.testing.Await.until("the warm pool of two", Duration.ofMinutes(2), () -> sandbox.poolWaiting() >= 2);
        }
        RunSpec spec = new RunSpec(UUID.randomUUID(), 1, 1, node, node, "sleep 300", null, null, Map.of(),
                Duration.ofMinutes(10), 4096, null, null);
        sandbox.start(spec);
        System.out.println("started " + spec.executionId());
        System.out.flush();
        new CountDownLatch(1).await(); // nothing counts it down: this JVM lives until it is SIGKILLed
    }
}
