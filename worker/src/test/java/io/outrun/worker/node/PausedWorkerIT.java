package io.outrun.worker.node;

import io.outrun.core.execution.Execution;
import io.outrun.core.execution.ExecutionStatus;
import io.outrun.core.execution.Submission;
import io.outrun.core.service.Core;
import io.outrun.core.store.DatabaseConfig;
import io.outrun.testing.Await;
import io.outrun.testing.Requirements;
import io.outrun.testing.TestDatabase;
import io.outrun.worker.testing.WorkerProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static io.outrun.testing.LogLines.count;

/**
 * A worker JVM paused (SIGSTOP, as a long GC or a frozen VM would) while it runs executions,
 * until they run again on the other node (past its lease ttl and the re-drive grace): each execution ends once, on the other node, and every run of the paused
 * attempt is dead before the next attempt's run starts (the runs' own kill switch, since the
 * paused JVM can do nothing); nothing the resumed JVM writes lands.
 */
class PausedWorkerIT {

    private static final Duration TTL = Duration.ofSeconds(3);

    @Test
    void pausedWorkersDockerRunsDieBeforeTheirNextAttemptsStart() throws Exception {
        Requirements.docker();
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        try (Core api = Core.open(db, "api")) {
            List<UUID> ids = new ArrayList<>();
            long since = System.currentTimeMillis() / 1000 - 1;
            try (WorkerProcess a = worker(db, "paused-docker-a", "docker")) {
                for (int i = 0; i < 2; i++) {
                    ids.add(api.service().submit(Submission.of("alice", "echo start; sleep 40; echo done")).execution().id());
                }
                awaitRunningOn(api, ids, "paused-docker-a/");
                Await.until("containers running", Duration.ofSeconds(30), () -> ids.stream().allMatch(id -> events(id, since)
                        .stream().anyMatch(e -> e.status().equals("start"))));
                try (WorkerProcess b = worker(db, "paused-docker-b", "docker")) {
                    pauseUntil(a, () -> awaitRunningOn(api, ids, "paused-docker-b/"));
                    Map<UUID, Execution> done = awaitEnded(api, ids);
                    for (UUID id : ids) {
                        Execution e = done.get(id);
                        assertThat(e.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
                        assertThat(e.attempt()).isEqualTo(2);
                        assertThat(e.stdout().text()).isEqualTo("start\ndone\n");
                        List<Event> events = events(id, since);
                        long firstEpochDied = events.stream().filter(ev -> ev.epoch() == 1 && ev.status().equals("die"))
                                .mapToLong(Event::nanos).min().orElseThrow(() -> new AssertionError("attempt 1's container never died: " + events));
                        long nextStarted = events.stream().filter(ev -> ev.epoch() > 1 && ev.status().equals("start"))
                                .mapToLong(Event::nanos).min().orElseThrow(() -> new AssertionError("no next attempt started: " + events));
                        System.out.printf("PAUSED (docker) %s: attempt 1's container died %.2f s before attempt 2's started%n",
                                id, (nextStarted - firstEpochDied) / 1e9);
                        assertThat(firstEpochDied).as("the paused attempt's container died before the next one started")
                                .isLessThan(nextStarted);
                    }
                    assertOneEndEach(ids, a.log() + b.log(), a.log());
                }
            }
        }
    }

    @Test
    void pausedWorkersProcessRunsDieBeforeTheirNextAttemptsStart() throws Exception {
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        Path dir = Files.createTempDirectory("outrun-paused-");
        dir.toFile().setWritable(true, false);
        try (Core api = Core.open(db, "api")) {
            List<UUID> ids = new ArrayList<>();
            try (WorkerProcess a = worker(db, "paused-proc-a", "process")) {
                for (int i = 0; i < 2; i++) {
                    // Each run writes its pid and a timestamp (ns) every 50 ms to a file shared by both attempts.
                    String f = dir.resolve("run-" + i).toString();
                    ids.add(api.service().submit(Submission.of("alice", "echo start; for i in $(seq 800); do echo \"$$ $(date +%s%N)\" >> "
                            + f + "; sleep 0.05; done; echo done")).execution().id());
                }
                awaitRunningOn(api, ids, "paused-proc-a/");
                try (WorkerProcess b = worker(db, "paused-proc-b", "process")) {
                    pauseUntil(a, () -> awaitRunningOn(api, ids, "paused-proc-b/"));
                    Map<UUID, Execution> done = awaitEnded(api, ids);
                    for (int i = 0; i < ids.size(); i++) {
                        Execution e = done.get(ids.get(i));
                        assertThat(e.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
                        assertThat(e.attempt()).isEqualTo(2);
                        assertThat(e.stdout().text()).isEqualTo("start\ndone\n");
                        // Two runs (two pids): the first one's last beat comes before the second one's first.
                        Map<String, long[]> spans = new HashMap<>();
                        for (String line : Files.readAllLines(dir.resolve("run-" + i))) {
                            String[] parts = line.split(" ");
                            long t = Long.parseLong(parts[1]);
                            spans.merge(parts[0], new long[] {t, t}, (x, y) -> new long[] {Math.min(x[0], y[0]), Math.max(x[1], y[1])});
                        }
                        assertThat(spans).as("two runs").hasSize(2);
                        List<long[]> ordered = spans.values().stream().sorted((x, y) -> Long.compare(x[0], y[0])).toList();
                        System.out.printf("PAUSED (process) %s: attempt 1 last seen %.2f s before attempt 2 first seen%n",
                                ids.get(i), (ordered.get(1)[0] - ordered.get(0)[1]) / 1e9);
                        assertThat(ordered.get(0)[1]).as("attempt 1 dead before attempt 2 ran").isLessThan(ordered.get(1)[0]);
                    }
                    assertOneEndEach(ids, a.log() + b.log(), a.log());
                }
            }
        }
    }

    /**
     * As {@code outrun dev} runs host processes (issue 42): in bubblewrap, served by the node's
     * spares (sandboxes made ahead, the default pool), the API bridge on. The kill switch is the
     * node's watchdog (the pid file names bwrap's pid before the run is handed over) and bwrap's
     * PID namespace: every run of the paused attempt is dead before the next attempt's run starts,
     * by the runs' own marks, a line every 100 ms.
     */
    @Test
    void pausedWorkersSpareRunsInBubblewrapDieBeforeTheirNextAttemptsStart() throws Exception {
        Requirements.binary("bwrap");
        Requirements.binary("socat");
        DatabaseConfig db = TestDatabase.migrated(DatabaseConfig::new);
        // In the workers' directory (the run's workdir, the only place it may write under bubblewrap).
        Path dir = Files.createDirectories(Path.of("target", "outrun-paused-" + UUID.randomUUID()).toAbsolutePath());
        Path leases = Files.createTempDirectory(Path.of("/tmp"), "olp-");
        String key = java.util.Base64.getEncoder().encodeToString(new java.security.SecureRandom().generateSeed(32));
        String[] dev = {"--lease-ttl-ms", Long.toString(TTL.toMillis()), "--sweep-interval-ms", "1000", "--cleanup-interval-s", "2",
                "--bubblewrap", "on", "--api-url", "http://127.0.0.1:9", "--lease-dir", leases.toString()};
        try (Core api = Core.open(db, "api")) {
            List<UUID> ids = new ArrayList<>();
            try (WorkerProcess a = WorkerProcess.startWith(Map.of("OUTRUN_SECRETS_KEY", key), db, "paused-bw-a", 2, "process", dev)) {
                // Its spares made (bwrap started by the worker's JVM, in a spare's directory), so that they serve both runs.
                Await.until("worker a's 2 spares", Duration.ofSeconds(60), () -> ProcessHandle.allProcesses()
                        .filter(p -> p.parent().map(x -> x.pid() == a.pid()).orElse(false))
                        .filter(p -> p.info().commandLine().map(c -> c.contains("bwrap") && c.contains("/spare-")).orElse(false))
                        .count() >= 2);
                for (int i = 0; i < 2; i++) {
                    String f = dir.resolve("run-" + i).toString();
                    ids.add(api.service().submit(Submission.of("alice", "echo start; echo \"$OUTRUN_API\" >&2; for i in $(seq 400); do"
                            + " echo \"$OUTRUN_ATTEMPT $(date +%s%N) $0\" >> " + f + "; sleep 0.1; done; echo done")).execution().id());
                }
                awaitRunningOn(api, ids, "paused-bw-a/");
                try (WorkerProcess b = WorkerProcess.startWith(Map.of("OUTRUN_SECRETS_KEY", key), db, "paused-bw-b", 2, "process", dev)) {
                    pauseUntil(a, () -> awaitRunningOn(api, ids, "paused-bw-b/"));
                    Map<UUID, Execution> done = awaitEnded(api, ids);
                    for (int i = 0; i < ids.size(); i++) {
                        Execution e = done.get(ids.get(i));
                        assertThat(e.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
                        assertThat(e.attempt()).isEqualTo(2);
                        assertThat(e.stdout().text()).isEqualTo("start\ndone\n");
                        assertThat(e.stderr().text()).as("the bridge on").isEqualTo("http://127.0.0.1:7171\n");
                        Map<String, long[]> spans = new HashMap<>();
                        List<String> lines = Files.readAllLines(dir.resolve("run-" + i));
                        for (String line : lines) {
                            String[] parts = line.split(" ");
                            long t = Long.parseLong(parts[1]);
                            spans.merge(parts[0], new long[] {t, t}, (x, y) -> new long[] {Math.min(x[0], y[0]), Math.max(x[1], y[1])});
                        }
                        assertThat(spans).as("two attempts").containsOnlyKeys("1", "2");
                        assertThat(lines.get(0)).as("attempt 1 ran on a spare (its script is in the spare's directory)")
                                .matches("1 \\d+ .*/spare-[^/]+/run\\.sh");
                        System.out.printf("PAUSED (bubblewrap, spares) %s: attempt 1 last seen %.2f s before attempt 2 first seen%n",
                                ids.get(i), (spans.get("2")[0] - spans.get("1")[1]) / 1e9);
                        assertThat(spans.get("1")[1]).as("attempt 1 dead before attempt 2 ran").isLessThan(spans.get("2")[0]);
                    }
                    assertOneEndEach(ids, a.log() + b.log(), a.log());
                }
            }
        }
    }

    private static WorkerProcess worker(DatabaseConfig db, String id, String sandbox) throws IOException, InterruptedException {
        // No warm pool: the docker case follows each run's container by its execution label.
        return WorkerProcess.startWith(db, id, 2, sandbox, "--lease-ttl-ms", Long.toString(TTL.toMillis()),
                "--sweep-interval-ms", "1000", "--cleanup-interval-s", "2", "--pool-size", "0");
    }

    /** Something that waits, with its own deadline. */
    private interface Wait {
        void await() throws Exception;
    }

    /** Keeps the worker stopped until {@code until} returns (it waits with its own deadline). */
    private static void pauseUntil(WorkerProcess w, Wait until) throws Exception {
        signal(w.pid(), "STOP");
        try {
            until.await();
        } finally {
            signal(w.pid(), "CONT");
        }
    }

    private static void signal(long pid, String sig) throws Exception {
        Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
        assertThat(p.waitFor()).isZero();
    }

    private static void awaitRunningOn(Core api, List<UUID> ids, String ownerPrefix) throws InterruptedException {
        Await.until("all running on " + ownerPrefix, Duration.ofSeconds(60), () -> ids.stream().allMatch(id -> {
            Execution e = api.submissions().find(id).orElseThrow();
            return e.status() == ExecutionStatus.RUNNING && e.leaseHolder().startsWith(ownerPrefix)
                    && e.stdout().totalBytes() > 0;
        }));
    }

    private static Map<UUID, Execution> awaitEnded(Core api, List<UUID> ids) throws InterruptedException {
        Map<UUID, Execution> done = new HashMap<>();
        Await.until("all ended", Duration.ofSeconds(150), () -> {
            ids.forEach(id -> api.submissions().find(id).filter(e -> e.status().isTerminal()).ifPresent(e -> done.put(id, e)));
            return done.size() == ids.size();
        });
        return done;
    }

    /** Each execution's end is written once, by the node that ran its last attempt, never by the paused one. */
    private static void assertOneEndEach(List<UUID> ids, String allLogs, String pausedLog) throws InterruptedException {
        for (UUID id : ids) {
            assertThat(count(allLogs, "execution " + id + " attempt \\d+ ended")).as("ends of " + id).isEqualTo(1);
            assertThat(count(pausedLog, "execution " + id + " attempt \\d+ ended")).as("ends written by the paused node").isZero();
        }
    }

    /** A container event as the engine recorded it. */
    record Event(long nanos, String status, long epoch) {
    }

    private static List<Event> events(UUID id, long sinceSeconds) {
        try {
            Process p = new ProcessBuilder("docker", "events", "--since", Long.toString(sinceSeconds),
                    "--until", Long.toString(System.currentTimeMillis() / 1000 + 1), "--filter", "type=container",
                    "--filter", "label=outrun.execution=" + id,
                    "--format", "{{.TimeNano}} {{.Status}} {{index .Actor.Attributes \"outrun.epoch\"}}")
                    .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor();
            List<Event> events = new ArrayList<>();
            for (String line : out.strip().split("\n")) {
                String[] parts = line.strip().split(" ");
                if (parts.length == 3 && parts[0].matches("\\d+") && parts[2].matches("\\d+")) {
                    events.add(new Event(Long.parseLong(parts[0]), parts[1], Long.parseLong(parts[2])));
                }
            }
            return events;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
