import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The fleet's JVMs, started from the fat jar as an operator would ({@code java -jar outrun.jar
 * worker|api|migrate|token}). Every pid goes to a file that bench/fleet's exit trap kills, so a
 * harness killed hard leaves nothing running.
 */
final class FleetNodes implements AutoCloseable {

    /** Small heaps, serial GC and C1 only: twelve idle JVMs must not eat the 2 cores the figures are measured on. */
    static final List<String> JVM_FLAGS = List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");

    record Node(String name, Process process, Path log, int metricsPort) {
    }

    private final Path jar;
    private final Path logs;
    private final Path pids;
    private final List<String> db;
    private final List<Node> workers = new ArrayList<>();
    private Node api;
    private int apiPort;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(60)).build();

    FleetNodes(Path jar, Path logs, Path pids, String dbUrl, String dbUser) throws IOException {
        this.jar = jar;
        this.logs = logs;
        this.pids = pids;
        this.db = List.of("--db-url", dbUrl, "--db-user", dbUser, "--db-password", "unused");
        Files.createDirectories(logs);
        // Every run gets its run token and reaches the API (issue 31), as in a fleet with a secrets
        // key: the figures include signing a token per attempt and its key's reads.
        this.secretsKey = logs.resolve("secrets-key");
        Files.writeString(secretsKey, io.outrun.core.secrets.SecretsKey.generate());
    }

    private final Path secretsKey;

    /** Runs a one-shot CLI command to its end and returns its output. */
    String cli(String name, String... args) throws Exception {
        List<String> cmd = command(args);
        cmd.addAll(db);
        Node n = spawn(name, cmd, 0);
        if (!n.process().waitFor(120, TimeUnit.SECONDS) || n.process().exitValue() != 0) {
            n.process().destroyForcibly();
            throw new IllegalStateException(name + " failed:\n" + Files.readString(n.log()));
        }
        return Files.readString(n.log());
    }

    void startApi() throws Exception {
        List<String> cmd = command("api", "--port", "0", "--bind", "127.0.0.1", "--secrets-key-file", secretsKey.toString());
        cmd.addAll(db);
        api = spawn("fleet-api", cmd, 0);
        String line = awaitLog(api, Pattern.compile("API listening on http://[^:]+:(\\d+)"), Duration.ofSeconds(120));
        apiPort = Integer.parseInt(line);
    }

    URI api(String path) {
        return URI.create("http://127.0.0.1:" + apiPort + path);
    }

    /** Starts workers until there are {@code n}, together, and waits until all are ready. */
    void scaleTo(int n) throws Exception {
        List<Node> started = new ArrayList<>();
        while (workers.size() + started.size() < n) {
            String name = "fleet-w" + (workers.size() + started.size() + 1);
            int metrics = freePort();
            // Plain host processes, as the figures before bubblewrap were measured: the database's cost is the point.
            List<String> cmd = command("worker", "--node-id", name, "--slots", "4", "--sandbox", "process",
                    "--bubblewrap", "off", "--metrics-port", String.valueOf(metrics),
                    "--secrets-key-file", secretsKey.toString(), "--api-url", "http://127.0.0.1:" + apiPort);
            cmd.addAll(db);
            started.add(spawn(name, cmd, metrics));
        }
        for (Node w : started) {
            awaitLog(w, Pattern.compile("outrun: worker " + Pattern.quote(w.name()) + " (ready)"), Duration.ofSeconds(240));
        }
        workers.addAll(started);
    }

    int size() {
        return workers.size();
    }

    List<Node> workers() {
        return List.copyOf(workers);
    }

    /** Runs ended per worker, from each node's own /metrics (outrun_node_runs_ended_total, all statuses). */
    Map<String, Long> runsEnded() {
        Pattern line = Pattern.compile("^outrun_node_runs_ended_total\\{[^}]*\\}\\s+([0-9.eE+]+)", Pattern.MULTILINE);
        Map<String, Long> ended = new LinkedHashMap<>();
        for (Node w : workers) {
            long sum = 0;
            try {
                String body = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + w.metricsPort() + "/metrics"))
                        .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString()).body();
                Matcher m = line.matcher(body);
                while (m.find()) {
                    sum += (long) Double.parseDouble(m.group(1));
                }
            } catch (Exception e) {
                sum = -1;
            }
            ended.put(w.name(), sum);
        }
        return ended;
    }

    /** SIGTERM to every worker (a graceful stop), then waits. */
    void stopWorkers() throws InterruptedException {
        stop(workers);
        workers.clear();
    }

    private static void stop(List<Node> nodes) throws InterruptedException {
        nodes.forEach(n -> n.process().destroy());
        for (Node n : nodes) {
            if (!n.process().waitFor(30, TimeUnit.SECONDS)) {
                n.process().destroyForcibly();
                n.process().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    @Override
    public void close() throws InterruptedException {
        List<Node> all = new ArrayList<>(workers);
        if (api != null) {
            all.add(api);
        }
        stop(all);
        workers.clear();
        api = null;
    }

    private List<String> command(String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(JVM_FLAGS);
        cmd.add("-jar");
        cmd.add(jar.toString());
        cmd.addAll(List.of(args));
        return cmd;
    }

    private Node spawn(String name, List<String> cmd, int metricsPort) throws IOException {
        Path log = logs.resolve(name + ".log");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        Files.writeString(pids, p.pid() + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        return new Node(name, p, log, metricsPort);
    }

    /** Waits for a line matching {@code pattern} in the node's output; returns its first group. */
    private static String awaitLog(Node n, Pattern pattern, Duration within) throws Exception {
        return Support.await(n.name() + " to be ready", within, 100, () -> {
            Matcher m = pattern.matcher(Files.readString(n.log()));
            if (m.find()) {
                return m.group(1);
            }
            if (!n.process().isAlive()) {
                throw new IllegalStateException(n.name() + " exited " + n.process().exitValue() + ":\n" + Files.readString(n.log()));
            }
            return null;
        });
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
