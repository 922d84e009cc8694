package io.outrun.sandbox.process;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * tty.sh ({@link ProcessSandbox#TTY}) under the host's bash, as the wrapper runs it: the run's
 * script file, the command the file beside it. (In the sandbox it runs only in bubblewrap:
 * BubblewrapSandboxIT.)
 */
class TtyScriptTest {

    @Test
    void theCommandBesideItRunsOnATerminalWithItsOwnStatus(@TempDir Path dir) throws Exception {
        io.outrun.testing.Requirements.require("the tty shim test", Files.isExecutable(Path.of(ProcessSandbox.SCRIPT_TOOL))
                ? null : "util-linux script is not installed");
        Path wrapper = ProcessSandbox.WRAPPER.writeTo(dir.resolve("outrun-run.sh"));
        Path script = ProcessSandbox.TTY.writeTo(dir.resolve("run-1.sh"));
        Files.writeString(ProcessSandbox.ttyCommand(script), "[ -t 0 ] && [ -t 1 ] && echo \"terminal ${0##*/}\"; exit 5\n");
        Process p = new ProcessBuilder("/usr/bin/setsid", "/bin/bash", wrapper.toString(), script.toString(), "",
                dir.resolve("run.pid").toString()).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isEqualTo(5);
        assertThat(out).contains("terminal run-1.sh.cmd");
    }
}
