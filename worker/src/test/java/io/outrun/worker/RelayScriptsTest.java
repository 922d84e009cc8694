package io.outrun.worker;

import io.outrun.proxy.EgressProxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code egress-relay.sh} under the host's bash, without Docker: in network, mount and PID
 * namespaces of its own (so 127.0.0.1:3128 and /run are the test's, and nothing outlives it), a stand-in proxy (socat echoing on the
 * unix socket) behind the relay; the command after the relay reaches it through 127.0.0.1:3128,
 * keeps its line numbers, and sees no variable of the relay's.
 */
class EgressRelayScriptTest {

    private static final Path SCRIPT = Path.of("src/main/resources/io/outrun/worker/egress-relay.sh");

    @Test
    void theScriptParsesAndItsLiteralsAreTheProxysConstants() throws Exception {
        assertThat(run(List.of("bash", "-n", SCRIPT.toString()), 10).exit).isZero();
        assertThat(WorkerNode.EGRESS_RELAY).doesNotContain("\n")
                .contains("TCP-LISTEN:" + EgressProxy.CONTAINER_PORT + ",")
                .contains("UNIX-CONNECT:" + EgressProxy.CONTAINER_SOCKET + " ")
                .contains("/dev/tcp/127.0.0.1/" + EgressProxy.CONTAINER_PORT + ")")
                .endsWith("; ");
        assertThat(Files.readString(SCRIPT)).contains("Assumes").contains("The caller passes");
    }

    @Test
    void aCommandAfterTheRelayReachesTheProxyThroughItsPort(@TempDir Path run) throws Exception {
        boolean ci = "true".equals(System.getenv("CI"));
        boolean socat = run(List.of("bash", "-c", "command -v socat"), 10).exit == 0;
        if (ci) {
            assertThat(socat).as("socat (Debian package; .ci/run installs it)").isTrue();
        }
        Assumptions.assumeTrue(socat, "socat is not installed");
        Assumptions.assumeTrue(run(List.of("unshare", "-rnmpf", "true"), 10).exit == 0 || ci,
                "this machine cannot make user namespaces");
        // The command: a request through the relay's port, an error naming its own line 2, and
        // a look for the relay's loop variable.
        String command = "exec 3<>/dev/tcp/127.0.0.1/" + EgressProxy.CONTAINER_PORT + "; echo hello >&3; read -r back <&3;"
                + " echo \"back:$back\"\nno_such_command_here\necho \"i:${_i-unset}\"";
        Path test = Files.writeString(run.resolve("test.sh"), String.join("\n",
                "set -u",
                "mount --bind " + run + " /run",
                "ip link set lo up 2>/dev/null || true",
                // The stand-in proxy: echoes what the relay brings it.
                "socat UNIX-LISTEN:" + EgressProxy.CONTAINER_SOCKET + ",fork EXEC:cat </dev/null >/dev/null 2>&1 &",
                "for _ in $(seq 1 50); do [ -S " + EgressProxy.CONTAINER_SOCKET + " ] && break; sleep 0.05; done",
                "bash -c " + quote(WorkerNode.EGRESS_RELAY + command),
                "echo \"exit:$?\""), StandardCharsets.UTF_8);
        // A PID namespace too: every process of it (socat, the relay) dies with its first.
        Result r = run(List.of("unshare", "-rnmpf", "--kill-child", "bash", test.toString()), 30);
        assertThat(r.out).as(r.out).contains("back:hello\n")
                .containsPattern("line 2: no_such_command_here: command not found")
                .contains("i:unset\n").contains("exit:0\n");
    }

    private static String quote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }

    private record Result(int exit, String out) {
    }

    private static Result run(List<String> argv, int seconds) throws Exception {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        p.getOutputStream().close();
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(argv + " did not end within " + seconds + " s");
        }
        return new Result(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }
}
