package io.outrun.sandbox.docker;

import io.outrun.sandbox.RunSpec;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;

/**
 * A worker JVM for {@link DockerLeftoversIT}: starts one long run, prints its execution id, and
 * waits to be SIGKILLed without ever closing anything.
 */
public final class AbandonedWorker {

    public static void main(String[] args) throws InterruptedException {
        String node = args[0];
        DockerSandbox sandbox = new DockerSandbox(DockerSandboxConfig.defaults(node));
        RunSpec spec = new RunSpec(UUID.randomUUID(), 1, 1, node, node, "sleep 300", null, null, Map.of(),
                Duration.ofMinutes(10), 4096, null, null);
        sandbox.start(spec);
        System.out.println("started " + spec.executionId());
        System.out.flush();
        new CountDownLatch(1).await(); // nothing counts it down: this JVM lives until it is SIGKILLed
    }
}
