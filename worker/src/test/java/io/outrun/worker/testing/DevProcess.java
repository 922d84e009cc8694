package io.outrun.worker.testing;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A real {@code outrun dev} in its own JVM ({@code java -jar outrun.jar dev}), as a user runs it:
 * {@link #kill()} sends SIGKILL, so its embedded PostgreSQL is left running, as after a crash.
 */
public final class DevProcess implements AutoCloseable {

    private static final Pattern API = Pattern.compile("API\\s+(http://\\S+)");
    private static final Pattern DB = Pattern.compile("database\\s+(jdbc:postgresql://\\S+)");

    private final Process process;
    private final Path log;

    private DevProcess(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    /** Starts {@code outrun dev} on {@code dataDir} (process sandbox, API on a free port) without waiting. */
    public static DevProcess launch(Path dataDir, String... extraArgs) throws IOException {
        return launch(dataDir, Map.of(), extraArgs);
    }

    /** As {@link #launch(Path, String...)} with extra environment variables. */
    public static DevProcess launch(Path dataDir, Map<String, String> env, String... extraArgs) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
                "-jar", WorkerProcess.jar().toString(), "dev",
                "--data-dir", dataDir.toString(), "--port", "0", "--sandbox", "process"));
        cmd.addAll(List.of(extraArgs));
        if (!cmd.contains("--dashboard-port")) {
            cmd.addAll(List.of("--dashboard-port", "0"));
        }
        Path dir = Path.of("target", "worker-logs");
        Files.createDirectories(dir);
        Path log = dir.resolve("dev-" + System.nanoTime() + ".log");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        return new DevProcess(pb.start(), log);
    }

    /** Starts {@code outrun dev} and waits for its banner. */
    public static DevProcess start(Path dataDir, String... extraArgs) throws IOException, InterruptedException {
        return start(dataDir, Map.of(), extraArgs);
    }

    /** As {@link #start(Path, String...)} with extra environment variables. */
    public static DevProcess start(Path dataDir, Map<String, String> env, String... extraArgs) throws IOException, InterruptedException {
        DevProcess dev = launch(dataDir, env, extraArgs);
        dev.awaitLog("Stop with Ctrl-C", Duration.ofSeconds(90)); // the banner's last line
        return dev;
    }

    /** The API's base URL, from the banner. */
    public URI api() throws IOException {
        return URI.create(banner(API));
    }

    /** The embedded PostgreSQL's JDBC URL (user postgres, no password), from the banner. */
    public String jdbcUrl() throws IOException {
        return banner(DB);
    }

    private String banner(Pattern pattern) throws IOException {
        Matcher m = pattern.matcher(log());
        if (!m.find()) {
            throw new IllegalStateException("no " + pattern + " in the banner:\n" + log());
        }
        return m.group(1);
    }

    public void awaitLog(String text, Duration within) throws IOException, InterruptedException {
        try {
            io.outrun.testing.Await.until("outrun dev to log '" + text + "'", within, () -> {
                String written;
                try {
                    written = log();
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
                if (!written.contains(text) && !process.isAlive()) {
                    throw new IllegalStateException("outrun dev exited with " + process.exitValue() + ":\n" + written);
                }
                return written.contains(text);
            });
        } catch (AssertionError timedOut) {
            throw new IllegalStateException(timedOut.getMessage() + ":\n" + log());
        }
    }

    /** Waits for the process to exit by itself and returns its exit code. */
    public int awaitExit(Duration within) throws InterruptedException {
        if (!process.waitFor(within.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("outrun dev still runs after " + within);
        }
        return process.exitValue();
    }

    public String log() throws IOException {
        return Files.readString(log);
    }

    public long pid() {
        return process.pid();
    }

    /** SIGKILL: nothing of it runs its shutdown path; its PostgreSQL keeps running. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroy();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                kill();
            }
        }
    }
}
