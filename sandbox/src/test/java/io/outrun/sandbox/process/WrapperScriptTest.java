package io.outrun.sandbox.process;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.sandbox.script.ForeignLocale;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * wrapper.sh ({@link ProcessSandbox#WRAPPER}) under the host's bash, spawned with its three
 * arguments and as a spare fed a go file, with a stand-in lease file and pid file; no worker.
 * The sandbox around it is ProcessSandboxTest's and ProcessSandboxSparesTest's.
 */
class WrapperScriptTest {

    @TempDir
    Path dir;
    private Path wrapper;
    private Path script;
    private Path lease;
    private Path pidFile;

    @BeforeEach
    void files() throws IOException {
        wrapper = ProcessSandbox.WRAPPER.writeTo(dir.resolve("outrun-run.sh"));
        script = dir.resolve("run-1.sh");
        lease = dir.resolve("lease");
        Files.writeString(lease, (now() + 600) + "\n");
        pidFile = dir.resolve("run.pid");
    }

    private static long now() {
        return System.currentTimeMillis() / 1000;
    }

    /** A finished wrapper: its status and output. */
    record Ended(int status, String stdout, String stderr) {
    }

    private Process spawn(Map<String, String> env, String... args) throws IOException {
        List<String> argv = new ArrayList<>(List.of("/usr/bin/setsid", "/bin/bash", wrapper.toString()));
        argv.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(argv).directory(dir.toFile());
        builder.environment().clear();
        builder.environment().put("PATH", "/usr/bin:/bin");
        builder.environment().putAll(env);
        return builder.start();
    }

    private static Ended end(Process p) throws Exception {
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        return new Ended(p.exitValue(), out, err);
    }

    @Test
    void aSpawnedRunWritesItsPidFileThenRunsTheCommandInItsOwnBash() throws Exception {
        Files.writeString(script, String.join("\n",
                "read -r s < /proc/$$/stat; a=(${s##*) })",
                "echo \"$$ ${a[19]} $(ps -o pgid= -p $$ | tr -d ' ') ${0##*/} $#\"",
                "echo \"[$(compgen -v _outrun_)]\"",
                "exit 7", ""));
        Ended run = end(spawn(Map.of(), script.toString(), lease.toString(), pidFile.toString()));
        assertThat(run.status()).as(run.stderr()).isEqualTo(7);
        String[] seen = run.stdout().lines().findFirst().orElseThrow().split(" ");
        assertThat(seen[2]).as("the leader of its own group").isEqualTo(seen[0]);
        assertThat(seen[3] + " " + seen[4]).as("$0 the script, no arguments").isEqualTo("run-1.sh 0");
        assertThat(Files.readString(pidFile)).isEqualTo(seen[0] + " " + seen[1] + " " + lease + "\n");
        assertThat(run.stdout()).as("the wrapper's own variables are gone").contains("[]\n");
    }

    @Test
    void aLeaseLapsedAtTheFirstLookNeverRunsTheCommand() throws Exception {
        Files.writeString(lease, (now() - 5) + "\n");
        Files.writeString(script, "echo RAN\n");
        Ended run = end(spawn(Map.of(), script.toString(), lease.toString(), pidFile.toString()));
        assertThat(run.status()).isEqualTo(137);
        assertThat(run.stdout()).isEmpty();
        assertThat(pidFile).doesNotExist();
    }

    @Test
    void withoutAPidFileTheRunDoesNotStartUnguarded() throws Exception {
        Files.writeString(script, "echo RAN\n");
        Ended run = end(spawn(Map.of(), script.toString(), "", dir.resolve("no/such/dir/run.pid").toString()));
        assertThat(run.status()).isEqualTo(126);
        assertThat(run.stderr()).contains("cannot write the pid file");
        assertThat(run.stdout()).isEmpty();
    }

    /** What the worker's handToSpare writes: the go file's fields, NUL-ended, then the path's length in four digits. */
    private byte[] goWord(Path go, Path workdir, Map<String, String> env) throws IOException {
        StringBuilder fields = new StringBuilder();
        for (String field : new String[] {script.toString(), lease.toString(), pidFile.toString(),
                workdir == null ? "" : workdir.toString()}) {
            fields.append(field).append('\0');
        }
        env.forEach((k, v) -> fields.append(k).append('\0').append(v).append('\0'));
        fields.append('\0');
        Files.write(go, fields.toString().getBytes(StandardCharsets.UTF_8));
        byte[] path = go.toString().getBytes(StandardCharsets.UTF_8);
        byte[] length = String.format(Locale.ROOT, "%04d", path.length).getBytes(StandardCharsets.US_ASCII);
        byte[] word = new byte[4 + path.length];
        System.arraycopy(length, 0, word, 0, 4);
        System.arraycopy(path, 0, word, 4, path.length);
        return word;
    }

    private static Ended send(Process spare, byte[] bytes) throws Exception {
        try (OutputStream in = spare.getOutputStream()) {
            in.write(bytes);
        }
        return end(spare);
    }

    /**
     * A spare under a multibyte locale (bash's own default, here {@link ForeignLocale}) counts the
     * header's bytes, not characters: a go file whose path and values are not ASCII.
     */
    @Test
    void aSpareTakesItsRunFromItsGoFileUnderAForeignLocale() throws Exception {
        Path workdir = Files.createDirectory(dir.resolve("مجلد é"));
        Path go = Files.createDirectory(dir.resolve("طلب")).resolve("run-1.sh.go");
        Files.writeString(script, String.join("\n",
                "echo \"${0##*/} $# $PWD\"",
                "echo \"$WORD|$SPACED|$SECONDS\"",
                "cat; echo \"stdin $?\"",
                "exit 4", ""));
        Map<String, String> env = new LinkedHashMap<>();
        env.put("WORD", "كلمة");
        env.put("SPACED", "two words\nand a line");
        Process spare = spawn(ForeignLocale.env());
        Thread.sleep(200); // it waits on its stdin
        Ended run = send(spare, goWord(go, workdir, env));
        assertThat(run.status()).as(run.stderr()).isEqualTo(4);
        assertThat(run.stdout()).isEqualTo("run-1.sh 0 " + workdir.toRealPath() + "\n"
                + "كلمة|two words\nand a line|0\nstdin 0\n");
        assertThat(Files.readString(pidFile)).startsWith(spare.pid() + " ").endsWith(" " + lease + "\n");
    }

    @Test
    void aSpareNotNeededLeavesQuietly() throws Exception {
        Ended run = end(spawn(Map.of()));
        assertThat(run.status()).isZero();
        assertThat(run.stdout() + run.stderr()).isEmpty();
    }

    /** Anything malformed is a run that must not look like a success (126), and never runs. */
    @Test
    void aMalformedGoMessageIsNeverASuccess() throws Exception {
        Files.writeString(script, "echo RAN\n");
        Path go = dir.resolve("run-1.sh.go");
        byte[] word = goWord(go, null, Map.of());
        String path = go.toString();
        for (byte[] bad : new byte[][] {"12".getBytes(StandardCharsets.US_ASCII), "12x4".getBytes(StandardCharsets.US_ASCII),
                java.util.Arrays.copyOf(word, word.length - 1)}) {
            Ended run = send(spawn(Map.of()), bad);
            assertThat(run.status()).as(new String(bad, StandardCharsets.UTF_8)).isEqualTo(126);
            assertThat(run.stdout()).isEmpty();
        }
        // A go file cut short (no empty name at its end).
        Files.write(go, (script + "\0" + lease + "\0" + pidFile + "\0\0A\0").getBytes(StandardCharsets.UTF_8));
        Ended run = send(spawn(Map.of()), word);
        assertThat(run.status()).as(path).isEqualTo(126);
        assertThat(run.stdout()).isEmpty();
    }
}
