package io.outrun.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A Docker engine of a test's own: its own socket, data root, exec root (and so its own
 * containerd), pid file, no bridge and no iptables, with the sandbox image loaded from the
 * machine's engine. Restarting or stopping it disturbs nothing else on the machine (other tests
 * use the main engine meanwhile). Needs root, {@code dockerd} and {@code unshare}
 * ({@link Requirements}: under {@code CI=true} a missing one fails the test, elsewhere it is
 * skipped with the reason).
 *
 * <p>The engine runs in a network namespace of its own ({@code unshare --net}, which execs
 * dockerd in place, so {@link #killEngine} still signals dockerd itself). A dockerd started with
 * {@code --bridge=none} in the host's namespace deletes the host's {@code docker0} at start, and
 * the host engine then cannot build or run anything on its default bridge until it restarts:
 * that broke {@code deploy/check.sh} after the suite on a fresh machine. In its own namespace the
 * private engine sees only its own loopback; its containers have no network anyway (Outrun's
 * runs use {@code none}), and its socket is a file, reachable from the host as before.
 * {@code PrivateDockerdIT} checks that the host's bridge survives a start, a restart and a close.
 */
public final class PrivateDockerd implements AutoCloseable {

    private final Path dir;
    private final boolean liveRestore;
    private Process process;

    private PrivateDockerd(Path dir, boolean liveRestore) {
        this.dir = dir;
        this.liveRestore = liveRestore;
    }

    /** Starts an engine (with the engine's {@code live-restore} on or off) and loads the sandbox image into it. */
    public static PrivateDockerd start(boolean liveRestore) throws IOException, InterruptedException {
        Requirements.docker();
        Requirements.root("a private Docker engine");
        Requirements.binary("dockerd");
        Requirements.binary("unshare");
        // Short: a unix socket path has at most 107 bytes.
        PrivateDockerd d = new PrivateDockerd(Files.createTempDirectory(Path.of("/tmp"), "outrun-dockerd-"), liveRestore);
        d.startEngine();
        d.sh("docker save " + Requirements.SANDBOX_IMAGE + " | docker -H " + d.host() + " load");
        return d;
    }

    /** {@code unix:///…/docker.sock}, for {@code --docker-host} and the sandbox config's {@code withDockerHost}. */
    public String host() {
        return "unix://" + dir.resolve("docker.sock");
    }

    public boolean liveRestore() {
        return liveRestore;
    }

    /** Starts the engine and waits until it answers. */
    public void startEngine() throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("unshare", "--net", "--", "dockerd",
                "--host", host(),
                "--data-root", dir.resolve("data").toString(),
                "--exec-root", dir.resolve("exec").toString(),
                "--pidfile", dir.resolve("docker.pid").toString(),
                "--bridge=none", "--iptables=false", "--ip6tables=false",
                "--live-restore=" + liveRestore));
        process = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("dockerd.log").toFile())).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!answers()) {
            if (!process.isAlive()) {
                throw new IllegalStateException("the private dockerd exited at start; see " + dir.resolve("dockerd.log"));
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the private dockerd did not answer within 60 s; see " + dir.resolve("dockerd.log"));
            }
            Thread.sleep(100);
        }
    }

    /** Stops the engine as a package upgrade does (SIGTERM to dockerd) and waits until it has exited. */
    public void stopEngine() throws InterruptedException {
        if (process == null || !process.isAlive()) {
            return;
        }
        process.destroy();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** Crashes the engine (SIGKILL to dockerd): nothing of its shutdown runs; its containerd and containers stay. */
    public void killEngine() throws InterruptedException {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * After {@link #killEngine} without live-restore: waits until the engine's containerd has died
     * with it. A dockerd started while that containerd is still dying waits for it to answer, then
     * gives up ("timeout waiting for containerd to start").
     */
    public void awaitContainerdGone(Duration within) throws IOException, InterruptedException {
        Path pidFile = dir.resolve("exec").resolve("containerd").resolve("containerd.pid");
        if (!Files.exists(pidFile)) {
            return;
        }
        long pid = Long.parseLong(Files.readString(pidFile).strip());
        Await.until("the killed engine's containerd (pid " + pid + ") to exit", within,
                () -> ProcessHandle.of(pid).map(p -> !p.isAlive()).orElse(true));
    }

    /** Stops the engine, then starts it again. */
    public void restart() throws IOException, InterruptedException {
        stopEngine();
        startEngine();
    }

    public boolean answers() {
        try {
            return run("docker -H " + host() + " version --format '{{.Server.Version}}' >/dev/null 2>&1") == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    /** Runs a docker CLI command against this engine (an operator's hand), e.g. {@code stop ID}. */
    public String docker(String args) throws IOException, InterruptedException {
        return sh("docker -H " + host() + " " + args);
    }

    /** Ids of Outrun containers on this engine, running or not. */
    public List<String> outrunContainers() throws IOException, InterruptedException {
        String out = docker("ps -aq --filter label=outrun=1").strip();
        return out.isEmpty() ? List.of() : List.of(out.split("\\s+"));
    }

    private String sh(String command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("bash", "-c", command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("`" + command + "` failed: " + out);
        }
        return out;
    }

    private static int run(String command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("bash", "-c", command).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        return p.waitFor(30, TimeUnit.SECONDS) ? p.exitValue() : -1;
    }

    /** Removes every container, stops the engine and its containerd, and deletes its directories. */
    @Override
    public void close() throws IOException, InterruptedException {
        if (process != null && process.isAlive()) {
            run("ids=$(docker -H " + host() + " ps -aq); [ -z \"$ids\" ] || docker -H " + host() + " rm -f $ids");
        }
        stopEngine();
        // With live-restore the engine leaves its containerd (and shims) running on purpose.
        run("for f in " + dir.resolve("exec") + "/containerd/containerd.pid; do [ -f \"$f\" ] && kill $(cat \"$f\"); done;"
                + " sleep 1; grep -q " + dir + " /proc/mounts && awk '{print $2}' /proc/mounts | grep '^" + dir
                + "' | sort -r | xargs -r umount -l; rm -rf " + dir);
    }
}
