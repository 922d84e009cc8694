package io.outrun.worker.node;

import io.outrun.worker.attempt.RunPreparation;
import io.outrun.worker.bridge.ApiBridge;
import io.outrun.worker.proxy.EgressProxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The egress relay of a container run, {@code egress-relay.sh}, under the host's bash, without
 * Docker: in network, mount and PID namespaces of its own (so 127.0.0.1:3128 and /run are the
 * test's, and nothing outlives it), a stand-in for the egress proxy (socat echoing on its unix
 * socket) behind it; the command after the relay reaches it through its port, keeps its line
 * numbers, and sees no variable of its. (The API relay is no line of the command since issue 42:
 * the sandboxes start it, ahead of the run where they can; BubblewrapSparesIT, BootstrapScriptTest
 * and ApiBridgeIT cover it.)
 */
class RelayScriptsTest {

    private static final Path EGRESS_SCRIPT = Path.of("src/main/resources/io/outrun/worker/attempt/egress-relay.sh");

    @Test
    void theScriptsParseAndTheirLiteralsAreTheirConstants() throws Exception {
        for (Path script : List.of(EGRESS_SCRIPT)) {
            assertThat(run(List.of("bash", "-n", script.toString()), 10).exit).isZero();
            assertThat(Files.readString(script)).contains("Assumes").contains("The caller passes");
        }
        assertThat(RunPreparation.EGRESS_RELAY).doesNotContain("\n")
                .contains("TCP-LISTEN:" + EgressProxy.CONTAINER_PORT + ",")
                .contains("UNIX-CONNECT:" + EgressProxy.CONTAINER_SOCKET + " ")
                .contains("/dev/tcp/127.0.0.1/" + EgressProxy.CONTAINER_PORT + ")")
                .endsWith("; ");
        assertThat(ApiBridge.CONTAINER_URL).endsWith(":" + ApiBridge.CONTAINER_PORT);
        assertThat(ApiBridge.CONTAINER_SOCKET).isEqualTo("/run/outrun-api/api.sock");
    }

    @Test
    void aCommandAfterTheRelayReachesItThroughItsPort(@TempDir Path run) throws Exception {
        // Under CI=true either missing fails the test (Requirements), never skips it.
        io.outrun.testing.Requirements.binary("socat");
        io.outrun.testing.Requirements.require("the relay scripts' test", run(List.of("unshare", "-rnmpf", "true"), 10).exit == 0
                ? null : "this machine cannot make user namespaces (unshare -rnmpf)");
        // The command: a request through the relay's port, an error naming its own line 2, and
        // a look for the relay's loop variable.
        String command = "exec 3<>/dev/tcp/127.0.0.1/" + EgressProxy.CONTAINER_PORT + "; echo egress >&3; read -r back <&3;"
                + " echo \"back:$back\"\nno_such_command_here\necho \"i:${_i-unset}\"";
        Path test = Files.writeString(run.resolve("test.sh"), String.join("\n",
                "set -u",
                "mount --bind " + run + " /run",
                "ip link set lo up 2>/dev/null || true",
                // The stand-in for the proxy: it echoes what the relay brings it.
                "socat UNIX-LISTEN:" + EgressProxy.CONTAINER_SOCKET + ",fork EXEC:cat </dev/null >/dev/null 2>&1 &",
                "for _ in $(seq 1 50); do [ -S " + EgressProxy.CONTAINER_SOCKET + " ] && break; sleep 0.05; done",
                "bash -c " + quote(RunPreparation.EGRESS_RELAY + command),
                "echo \"exit:$?\""), StandardCharsets.UTF_8);
        // A PID namespace too: every process of it (socat, the relay) dies with its first.
        Result r = run(List.of("unshare", "-rnmpf", "--kill-child", "bash", test.toString()), 30);
        assertThat(r.out).as(r.out).contains("back:egress\n")
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
