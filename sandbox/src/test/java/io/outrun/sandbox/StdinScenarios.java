package io.outrun.sandbox;

import io.outrun.model.inputs.StdinMode;
import io.outrun.testing.Await;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What every sandbox must do with a run's stdin, run by each backend's tests against the real thing. */
public final class StdinScenarios {

    private StdinScenarios() {
    }

    /** A prompt answered line by line, then raw bytes and the end of file, each read once and in order. */
    public static void aPromptIsAnsweredLineByLine(Sandbox sandbox, RunSpec base) throws Exception {
        String command = "read a; echo got:$a; read b; echo got:$b; cat | od -An -c | tr -s ' '; echo end";
        try (Run run = sandbox.start(withCommand(base, command).withStdin(StdinMode.PIPE))) {
            run.writeStdin("one\n".getBytes(StandardCharsets.UTF_8));
            Await.until("the first answer read", Duration.ofSeconds(20), () -> run.stdout().text().contains("got:one"));
            assertThat(run.stdout().text()).doesNotContain("got:two");
            run.writeStdin("two\n".getBytes(StandardCharsets.UTF_8));
            Await.until("the second answer read", Duration.ofSeconds(20), () -> run.stdout().text().contains("got:two"));
            // Bytes that are not text, a NUL among them, and an empty write: the pipe carries them as they are.
            run.writeStdin(new byte[] {'x', 0, (byte) 0xff, '\n'});
            run.writeStdin(new byte[0]);
            run.closeStdin();
            run.closeStdin();
            Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
            assertThat(exit.exitCode()).as(run.stderr().text()).isZero();
            assertThat(run.stdout().text()).isEqualTo("got:one\ngot:two\n x \\0 377 \\n\nend\n");
        }
    }

    /** With a terminal, the command sees one on its stdin (and its output comes through it). */
    public static void aTerminalIsATerminal(Sandbox sandbox, RunSpec base) throws Exception {
        String command = "test -t 0 && echo stdin-is-a-tty; test -t 1 && echo stdout-is-a-tty; read a; echo got:$a";
        try (Run run = sandbox.start(withCommand(base, command).withStdin(StdinMode.TTY))) {
            run.writeStdin("hello\n".getBytes(StandardCharsets.UTF_8));
            Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow(() -> new AssertionError(
                    "the terminal run did not end; stdout: " + run.stdout().text() + " stderr: " + run.stderr().text()));
            assertThat(exit.exitCode()).as(run.stdout().text() + run.stderr().text()).isZero();
            String out = run.stdout().text().replace("\r", "");
            assertThat(out).contains("stdin-is-a-tty\n").contains("stdout-is-a-tty\n").contains("got:hello\n");
        }
    }

    /** Without stdin open, a write is refused and the command reads end of file at once. */
    public static void withoutStdinTheCommandReadsNothing(Sandbox sandbox, RunSpec base) throws Exception {
        try (Run run = sandbox.start(withCommand(base, "if read a; then echo read:$a; else echo eof; fi"))) {
            assertThatThrownBy(() -> run.writeStdin("x\n".getBytes(StandardCharsets.UTF_8)))
                    .isInstanceOf(java.io.IOException.class).hasMessageContaining("stdin");
            assertThat(run.awaitExit(Duration.ofSeconds(30)).orElseThrow().exitCode()).isZero();
            assertThat(run.stdout().text()).isEqualTo("eof\n");
        }
    }

    public static RunSpec withCommand(RunSpec base, String command) {
        return new RunSpec(base.executionId(), base.attempt(), base.epoch(), base.nodeId(), base.incarnation(), command,
                base.image(), base.workdir(), base.env(), base.timeout(), base.maxOutputBytes(), base.limits(),
                base.leaseFile(), base.files(), base.stdin());
    }
}
