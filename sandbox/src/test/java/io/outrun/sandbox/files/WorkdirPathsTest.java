package io.outrun.sandbox.files;

import io.outrun.model.inputs.ArtifactPattern;
import io.outrun.model.inputs.InputPath;
import io.outrun.model.inputs.InputFile;
import io.outrun.model.inputs.InputTar;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Paths stay inside the workdir: in what is written, in what is collected. */
class WorkdirPathsTest {

    @TempDir
    Path dir;

    @Test
    void inputPathsThatLeaveTheWorkdirAreRefused() {
        for (String bad : new String[] {"../x", "/etc/passwd", "a/../../x", "a/..", "..", "", ".", "a\0b"}) {
            assertThatThrownBy(() -> InputPath.check(bad)).as(bad).isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(InputPath.check("./a//b/")).isEqualTo("a/b");
    }

    @Test
    void aNameNoFileSystemHoldsIsRefusedAtSubmit() {
        assertThat(InputPath.check("d/" + "n".repeat(255))).endsWith("n".repeat(255));
        assertThatThrownBy(() -> InputPath.check("d/" + "n".repeat(256))).hasMessageContaining("255 bytes");
        // Bytes, not characters: 128 two-byte characters are 256 bytes.
        assertThatThrownBy(() -> InputPath.check("é".repeat(128))).hasMessageContaining("255 bytes");
    }

    @Test
    void patternsMatchFilesAndWholeDirectories() {
        ArtifactPattern tars = ArtifactPattern.compile("dist/*.tar");
        assertThat(tars.base()).isEqualTo("dist");
        assertThat(tars.matches("dist/app.tar")).isTrue();
        assertThat(tars.matches("dist/sub/app.tar")).isFalse();
        ArtifactPattern deep = ArtifactPattern.compile("logs/**");
        assertThat(deep.matches("logs/a/b.log")).isTrue();
        ArtifactPattern build = ArtifactPattern.compile("build");
        assertThat(build.base()).isEqualTo("build");
        assertThat(build.matches("build/x/y.o")).isTrue();
        assertThat(build.matches("buildx")).isFalse();
        assertThat(ArtifactPattern.compile("*.xml").base()).isEmpty();
        assertThatThrownBy(() -> ArtifactPattern.compile("../*.xml")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aHostWorkdirIsNeverWrittenThroughALink() throws IOException {
        Path outside = Files.createDirectories(dir.resolve("outside"));
        Path work = Files.createDirectories(dir.resolve("work"));
        Files.createSymbolicLink(work.resolve("link"), outside);
        assertThatThrownBy(() -> HostWorkdir.extract(tar("link/evil.txt"), work)).isInstanceOf(IOException.class);
        assertThat(outside.resolve("evil.txt")).doesNotExist();
        HostWorkdir.extract(new ByteArrayInputStream(InputTar.build(List.of(
                new InputFile("a/b.txt", "b".getBytes(StandardCharsets.UTF_8), 0640)))), work);
        assertThat(Files.readString(work.resolve("a/b.txt"))).isEqualTo("b");
        List<String> seen = new ArrayList<>();
        HostWorkdir.visit(work, "", (entry, content) -> seen.add(entry.path() + ":" + entry.type()));
        assertThat(seen).contains("a:DIRECTORY", "a/b.txt:FILE", "link:SYMLINK");
    }

    private static ByteArrayInputStream tar(String name) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
            TarArchiveEntry e = new TarArchiveEntry(name);
            e.setSize(1);
            tar.putArchiveEntry(e);
            tar.write('x');
            tar.closeArchiveEntry();
        }
        return new ByteArrayInputStream(bytes.toByteArray());
    }
}
