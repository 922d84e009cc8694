package io.outrun.sandbox.docker;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * bootstrap.sh under the host's bash without Docker: in fresh user, mount and PID namespaces
 * ({@code standin-container.sh} as their first process, where docker-init would be), with /tmp
 * and /run tmpfs of their own, the run's lease file at {@link ContainerRecipe#LEASE_MOUNT} and a
 * stand-in for setpriv that records how it was called and drops nothing (the namespaces have one
 * user). So the kill switch's {@code kill -KILL -1} reaches only the stand-in's processes. Run as
 * nobody when the tests run as root, so that a pids limit holds (root ignores it).
 */
final class StandInContainer {

    /** Where the stand-in setpriv writes its arguments and its environment (world-writable). */
    final Path dir;
    private final Path harness;
    private final Path setpriv;

    StandInContainer() throws IOException {
        Path target = Path.of("target").toAbsolutePath();
        Files.createDirectories(target);
        // Under target, not /tmp: the stand-in mounts its own /tmp over the host's.
        dir = Files.createTempDirectory(target, "standin-container-");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        harness = dir.resolve("standin-container.sh");
        try (InputStream in = StandInContainer.class.getResourceAsStream("standin-container.sh")) {
            Files.write(harness, in.readAllBytes());
        }
        setpriv = dir.resolve("setpriv");
        Files.writeString(setpriv, "#!/bin/bash\n"
                + "printf '%s\\n' \"$@\" > " + dir.resolve("setpriv.args") + "\n"
                + "env > " + dir.resolve("setpriv.env") + "\n"
                + "while [ \"${1#--}\" != \"$1\" ]; do shift; done\n"
                + "exec \"$@\"\n");
        Files.setPosixFilePermissions(setpriv, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    /** Why the stand-in cannot run here (no unshare, no user namespaces), or null. */
    static String unusableBecause() {
        if (!Files.isExecutable(Path.of("/usr/bin/unshare")) || !Files.isExecutable(Path.of("/usr/bin/setpriv"))) {
            return "needs util-linux unshare and setpriv";
        }
        try {
            List<String> argv = new ArrayList<>(asNobody());
            argv.addAll(List.of("/usr/bin/unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork",
                    "--mount-proc", "/bin/bash", "-c", "mount -t tmpfs tmpfs /tmp"));
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(20, TimeUnit.SECONDS) || p.exitValue() != 0) {
                return "unshare cannot make user, mount and PID namespaces here: " + out.strip();
            }
            return null;
        } catch (IOException | InterruptedException e) {
            return "unshare cannot run: " + e;
        }
    }

    private static List<String> asNobody() {
        return "root".equals(System.getProperty("user.name"))
                ? List.of("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
                : List.of();
    }

    /** Starts the bootstrap: {@code argv} from {@link ContainerRecipe#bootstrap}, the container's default environment plus {@code extraEnv}. */
    Running start(String[] argv, Path leaseFile, boolean withSetpriv, Integer pidsLimit, Map<String, String> extraEnv)
            throws IOException {
        List<String> command = new ArrayList<>(asNobody());
        command.addAll(List.of("/usr/bin/unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork",
                "--mount-proc", "--kill-child", "/bin/bash", harness.toString(), withSetpriv ? setpriv.toString() : "",
                leaseFile == null ? "" : leaseFile.toString(), pidsLimit == null ? "" : pidsLimit.toString()));
        command.addAll(List.of(argv));
        ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile());
        builder.environment().clear();
        for (String pair : ContainerRecipe.env(Map.of(), ContainerRecipe.DEFAULT_WORKDIR)) {
            int eq = pair.indexOf('=');
            builder.environment().put(pair.substring(0, eq), pair.substring(eq + 1));
        }
        builder.environment().putAll(extraEnv);
        return new Running(builder.start());
    }

    /** Removes its directory (what the stand-in setpriv wrote, the harness). */
    void remove() throws IOException {
        try (var files = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) files.sorted(java.util.Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** What setpriv was called with (its arguments, one a line), or null if it never ran. */
    String setprivArgs() throws IOException {
        Path file = dir.resolve("setpriv.args");
        return Files.exists(file) ? Files.readString(file) : null;
    }

    /** The environment setpriv was started with: the root side's. */
    String setprivEnv() throws IOException {
        return Files.readString(dir.resolve("setpriv.env"));
    }

    /** A started stand-in: its stdin, and its output collected as it comes. */
    static final class Running implements AutoCloseable {
        final Process process;
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final ByteArrayOutputStream err = new ByteArrayOutputStream();
        private final List<Thread> pumps = new ArrayList<>();

        Running(Process process) {
            this.process = process;
            pumps.add(pump(process.getInputStream(), out));
            pumps.add(pump(process.getErrorStream(), err));
        }

        private static Thread pump(InputStream from, ByteArrayOutputStream to) {
            Thread t = new Thread(() -> {
                byte[] buffer = new byte[8192];
                try {
                    for (int n; (n = from.read(buffer)) >= 0; ) {
                        synchronized (to) {
                            to.write(buffer, 0, n);
                        }
                    }
                } catch (IOException ignored) {
                    // Ended.
                }
            }, "standin-output");
            t.setDaemon(true);
            t.start();
            return t;
        }

        OutputStream stdin() {
            return process.getOutputStream();
        }

        /** Writes {@code bytes} to its stdin and closes it (a fresh container's whole input). */
        Running send(byte[] bytes) throws IOException {
            try (OutputStream in = process.getOutputStream()) {
                in.write(bytes);
            }
            return this;
        }

        /** The exit status, or -1 if it did not end within {@code limit}. */
        int awaitExit(Duration limit) throws InterruptedException {
            if (!process.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
                return -1;
            }
            // The pumps finish once the stand-in's last process is gone.
            for (Thread pump : pumps) {
                pump.join(5000);
            }
            return process.exitValue();
        }

        String stdout() {
            synchronized (out) {
                return out.toString(StandardCharsets.UTF_8);
            }
        }

        String stderr() {
            synchronized (err) {
                return err.toString(StandardCharsets.UTF_8);
            }
        }

        @Override
        public void close() {
            process.destroyForcibly();
        }
    }
}
