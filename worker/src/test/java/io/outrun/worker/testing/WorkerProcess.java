package io.outrun.worker.testing;

import io.outrun.core.store.DatabaseConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real worker node in its own JVM ({@code java -jar outrun.jar worker}), for crash tests:
 * {@link #kill()} sends SIGKILL, so nothing of the node runs its shutdown path.
 */
public final class WorkerProcess implements AutoCloseable {

    private final String nodeId;
    private final Process process;
    private final Path log;

    private WorkerProcess(String nodeId, Process process, Path log) {
        this.nodeId = nodeId;
        this.process = process;
        this.log = log;
    }

    /** The fat jar under test: failsafe passes it in OUTRUN_TEST_JAR. */
    public static Path jar() {
        String path = System.getenv("OUTRUN_TEST_JAR");
        Path jar = Path.of(path != null ? path : "target/outrun.jar");
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("the outrun jar is missing at " + jar.toAbsolutePath()
                    + ": run the tests with ./mvnw verify (package runs first)");
        }
        return jar;
    }

    /** Starts {@code outrun worker} and waits until it says it is ready. */
    public static WorkerProcess start(DatabaseConfig db, String nodeId, int slots)
            throws IOException, InterruptedException {
        return startWith(db, nodeId, slots, "process");
    }

    /** As {@link #start(DatabaseConfig, String, int)} with the given sandbox backend and extra options. */
    public static WorkerProcess startWith(DatabaseConfig db, String nodeId, int slots, String sandbox, String... extraArgs)
            throws IOException, InterruptedException {
        return startWith(java.util.Map.of(), db, nodeId, slots, sandbox, extraArgs);
    }

    /** As {@link #startWith(DatabaseConfig, String, int, String, String...)} with more environment ({@code OTEL_*}...). */
    public static WorkerProcess startWith(java.util.Map<String, String> env, DatabaseConfig db, String nodeId, int slots,
                                          String sandbox, String... extraArgs) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(
                javaBinary(), "-Xmx256m", "-jar", jar().toString(), "worker",
                "--db-url", db.url(), "--db-user", db.user(), "--db-password", db.password(),
                "--node-id", nodeId, "--slots", String.valueOf(slots), "--sandbox", sandbox));
        if (sandbox.equals("process") && java.util.Arrays.stream(extraArgs).noneMatch(a -> a.equals("--bubblewrap"))) {
            // These workers' tests follow a run's processes by the pids it prints: plain host
            // processes (BubblewrapIT covers the isolated ones, and outrun dev uses them).
            cmd.addAll(List.of("--bubblewrap", "off"));
        }
        if (!db.directUrl().equals(db.url())) {
            cmd.addAll(List.of("--db-direct-url", db.directUrl()));
        }
        cmd.addAll(List.of(extraArgs));
        Path dir = Path.of("target", "worker-logs");
        Files.createDirectories(dir);
        Path log = dir.resolve(nodeId + "-" + System.nanoTime() + ".log");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        WorkerProcess w = new WorkerProcess(nodeId, p, log);
        // The whole line: a failing node may well print "already" first.
        w.awaitLog("outrun: worker " + nodeId + " ready", Duration.ofSeconds(60));
        return w;
    }

    private static String javaBinary() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    public String nodeId() {
        return nodeId;
    }

    public long pid() {
        return process.pid();
    }

    /** Waits for a line containing {@code text} in the node's output. */
    public void awaitLog(String text, Duration within) throws IOException, InterruptedException {
        try {
            io.outrun.testing.Await.until("worker " + nodeId + " to log '" + text + "'", within, () -> {
                String written = logText();
                if (!written.contains(text) && !process.isAlive()) {
                    throw new IllegalStateException("worker " + nodeId + " exited with " + process.exitValue() + ":\n" + written);
                }
                return written.contains(text);
            });
        } catch (AssertionError timedOut) {
            throw new IllegalStateException(timedOut.getMessage() + ":\n" + Files.readString(log));
        }
    }

    private String logText() {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    public String log() throws IOException {
        return Files.readString(log);
    }

    /** SIGKILL: the node dies at once, holding its leases. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    /** SIGTERM, as a platform's rolling deploy sends; waits for the exit and returns its code. */
    public int terminate(Duration within) throws InterruptedException {
        process.destroy();
        if (!process.waitFor(within.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("worker " + nodeId + " did not exit within " + within + " of SIGTERM");
        }
        return process.exitValue();
    }

    /** SIGTERM without waiting. */
    public void sendTerm() {
        process.destroy();
    }

    /** Waits for the exit and returns its code. */
    public int awaitExit(Duration within) throws InterruptedException {
        if (!process.waitFor(within.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("worker " + nodeId + " did not exit within " + within);
        }
        return process.exitValue();
    }

    /** Runs {@code outrun ARGS} (a CLI command on the same jar) and returns what it printed. */
    public static String cli(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(javaBinary(), "-jar", jar().toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("outrun " + String.join(" ", args) + " did not end");
        }
        return out;
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroy();
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                kill();
            }
        }
    }
}
