package io.outrun.sandbox.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.outrun.sandbox.Exit;
import io.outrun.sandbox.Limits;
import io.outrun.sandbox.Run;
import io.outrun.sandbox.RunSpec;
import io.outrun.sandbox.capture.FullOutput;
import io.outrun.model.inputs.InputFile;
import io.outrun.model.inputs.InputTar;
import io.outrun.sandbox.files.RunFiles;
import io.outrun.sandbox.files.WorkdirEntry;
import io.outrun.testing.Requirements;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Files into a container's workdir before its command, and the workdir read back after its end. */
class WorkdirFilesIT {

    static final String NODE = "it-files-" + UUID.randomUUID().toString().substring(0, 8);
    static DockerSandbox sandbox;

    @TempDir
    Path spool;

    @BeforeAll
    static void startSandbox() {
        Requirements.docker();
        sandbox = new DockerSandbox(DockerSandboxConfig.defaults(NODE));
    }

    @AfterAll
    static void nothingIsLeftBehind() {
        if (sandbox == null) {
            return;
        }
        sandbox.close();
        assertThat(DockerSandboxIT.outrunContainers(NODE)).as("containers left").isEmpty();
        try (DockerClients clients = new DockerClients(DockerSandboxConfig.defaults(NODE))) {
            assertThat(clients.control.listVolumesCmd().withFilter("label", List.of("outrun.node=" + NODE)).exec().getVolumes())
                    .as("volumes left").isNullOrEmpty();
        }
    }

    private RunSpec spec(String command, RunFiles files) {
        return new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, command, null, null, Map.of(), Duration.ofSeconds(30),
                4096, Limits.DEFAULTS, null, files);
    }

    @Test
    void inputFilesAreThereByteExactAndTheWorkdirComesBack() throws Exception {
        byte[] binary = new byte[300_000];
        new Random(7).nextBytes(binary);
        byte[] tar = InputTar.build(List.of(
                new InputFile("hello.txt", "héllo\n".getBytes(StandardCharsets.UTF_8), 0644),
                new InputFile("bin/data.bin", binary, 0600),
                new InputFile("run.sh", "#!/bin/bash\necho ran\n".getBytes(StandardCharsets.UTF_8), 0755)));
        RunFiles files = new RunFiles(List.of(() -> new ByteArrayInputStream(tar)), true, 0, null);
        try (Run run = sandbox.start(spec("set -e; cat hello.txt; ./run.sh; sha256sum bin/data.bin;"
                + " cp bin/data.bin out.bin; echo new > bin/new.txt; ln -s /etc/passwd pw; mkfifo pipe", files))) {
            Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
            assertThat(exit.exitCode()).as(run.stderr().text()).isZero();
            assertThat(run.stdout().text()).contains("héllo\nran\n").contains(sha256(binary));
            Map<String, WorkdirEntry> seen = new LinkedHashMap<>();
            Map<String, byte[]> contents = new LinkedHashMap<>();
            run.readWorkdir("", (entry, in) -> {
                seen.put(entry.path(), entry);
                contents.put(entry.path(), in.readAllBytes());
            });
            assertThat(contents.get("out.bin")).isEqualTo(binary);
            assertThat(new String(contents.get("bin/new.txt"), StandardCharsets.UTF_8)).isEqualTo("new\n");
            assertThat(seen.get("pw").type()).isEqualTo(WorkdirEntry.Type.SYMLINK);
            assertThat(contents.get("pw")).isEmpty();
            assertThat(seen.get("pipe").type()).isEqualTo(WorkdirEntry.Type.OTHER);
            assertThat(seen.get("run.sh").mode() & 0777).isEqualTo(0755);
            Map<String, byte[]> one = new LinkedHashMap<>();
            run.readWorkdir("bin/new.txt", (entry, in) -> one.put(entry.path(), in.readAllBytes()));
            assertThat(one).containsOnlyKeys("bin/new.txt");
            run.readWorkdir("missing", (entry, in) -> one.put(entry.path(), in.readAllBytes()));
            assertThat(one).containsOnlyKeys("bin/new.txt");
        }
    }

    @Test
    void theWorkdirIsReadableAfterATimeout() throws Exception {
        RunFiles files = new RunFiles(List.of(), true, 0, null);
        RunSpec spec = new RunSpec(UUID.randomUUID(), 1, 1, NODE, NODE, "echo partial > p.txt; sleep 60", null, null,
                Map.of(), Duration.ofSeconds(2), 4096, Limits.DEFAULTS, null, files);
        try (Run run = sandbox.start(spec)) {
            Exit exit = run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
            assertThat(exit.timedOut()).isTrue();
            Map<String, byte[]> contents = new LinkedHashMap<>();
            run.readWorkdir("", (entry, in) -> contents.put(entry.path(), in.readAllBytes()));
            assertThat(new String(contents.get("p.txt"), StandardCharsets.UTF_8)).isEqualTo("partial\n");
        }
    }

    @Test
    void keepsTheWholeOfAStreamThatOutgrowsItsBound() throws Exception {
        RunFiles files = new RunFiles(List.of(), false, 64L << 20, spool);
        try (Run run = sandbox.start(spec("seq 1 200000", files))) {
            run.awaitExit(Duration.ofSeconds(30)).orElseThrow();
            assertThat(run.stdout().truncated()).isTrue();
            FullOutput.Spooled whole = run.fullOutput(1).orElseThrow();
            StringBuilder expected = new StringBuilder();
            for (int i = 1; i <= 200000; i++) {
                expected.append(i).append('\n');
            }
            byte[] bytes;
            try (InputStream in = new GZIPInputStream(Files.newInputStream(whole.file()))) {
                bytes = in.readAllBytes();
            }
            assertThat(new String(bytes, StandardCharsets.US_ASCII)).isEqualTo(expected.toString());
            assertThat(whole.rawBytes()).isEqualTo(bytes.length);
            assertThat(whole.sha256()).isEqualTo(sha256(bytes));
            assertThat(whole.complete()).isTrue();
            assertThat(run.fullOutput(2)).isEmpty();
        }
        assertThat(Files.list(spool)).isEmpty();
    }

    static String sha256(byte[] bytes) throws Exception {
        return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(bytes));
    }
}
