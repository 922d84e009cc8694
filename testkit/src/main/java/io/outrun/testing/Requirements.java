package io.outrun.testing;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * The one policy for the outside parts a test needs (the Docker engine and the sandbox image, a
 * binary such as {@code pgbouncer} or {@code npx}, root): under {@code CI=true} a missing part
 * fails the test, since CI must prove what the test proves; elsewhere the test is aborted
 * (reported as skipped) with the reason. Each method returns when the part is there.
 */
public final class Requirements {

    /** The engine the sandbox uses by default (sandbox {@code DockerSandboxConfig.DEFAULT_HOST}). */
    public static final String DOCKER_HOST = "unix:///var/run/docker.sock";
    /** The sandbox's default image (sandbox {@code DockerSandboxConfig.DEFAULT_IMAGE}), built by sandbox/image/build.sh. */
    public static final String SANDBOX_IMAGE = "outrun-sandbox:latest";

    private static final List<String> SBIN = List.of("/usr/local/sbin", "/usr/sbin", "/sbin");

    private Requirements() {
    }

    /** The default Docker engine answers and has the sandbox image. */
    public static void docker() {
        require("Docker tests", dockerProblem());
    }

    /**
     * An executable {@code name} on the PATH (or in an sbin directory, where Debian puts daemons
     * such as pgbouncer and dockerd); returns its path.
     */
    public static Path binary(String name) {
        Path found = find(name);
        require("tests that need " + name, found == null ? name + " is not installed (not on the PATH nor in " + String.join(", ", SBIN) + ")" : null);
        return found;
    }

    /** The tests run as root; {@code why} names what needs it, e.g. "a private Docker engine". */
    public static void root(String why) {
        require("tests that need root", "root".equals(System.getProperty("user.name")) ? null : why + " needs root");
    }

    /**
     * The policy itself: returns when {@code problem} is null; otherwise fails under
     * {@code CI=true} and aborts the test elsewhere, naming {@code what} and the problem.
     */
    public static void require(String what, String problem) {
        if (problem == null) {
            return;
        }
        if (underCi()) {
            Assertions.fail(what + " cannot run under CI=true: " + problem);
        }
        Assumptions.abort("skipping " + what + " (they fail instead under CI=true): " + problem);
    }

    /** True when {@code CI=true}: a missing part is a failure there. */
    public static boolean underCi() {
        return "true".equalsIgnoreCase(System.getenv("CI"));
    }

    private static Path find(String name) {
        List<String> dirs = new ArrayList<>();
        String path = System.getenv("PATH");
        if (path != null) {
            dirs.addAll(List.of(path.split(File.pathSeparator)));
        }
        dirs.addAll(SBIN);
        for (String dir : dirs) {
            Path candidate = Path.of(dir.isEmpty() ? "." : dir, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    private static String dockerProblem() {
        DefaultDockerClientConfig config = DefaultDockerClientConfig.createDefaultConfigBuilder()
                .withDockerHost(DOCKER_HOST).withDockerTlsVerify(false).build();
        ApacheDockerHttpClient http = new ApacheDockerHttpClient.Builder()
                .dockerHost(config.getDockerHost())
                .connectionTimeout(Duration.ofSeconds(5))
                .responseTimeout(Duration.ofSeconds(30))
                .build();
        DockerClient client = DockerClientImpl.getInstance(config, http);
        try {
            try {
                client.pingCmd().exec();
            } catch (RuntimeException e) {
                return "the Docker engine at " + DOCKER_HOST + " does not answer (" + e.getMessage() + ")";
            }
            try {
                client.inspectImageCmd(SANDBOX_IMAGE).exec();
            } catch (RuntimeException e) {
                return "image " + SANDBOX_IMAGE + " is missing; build it with sandbox/image/build.sh";
            }
            return null;
        } finally {
            try {
                client.close();
            } catch (IOException ignored) {
                // The probe has its answer.
            }
        }
    }
}
