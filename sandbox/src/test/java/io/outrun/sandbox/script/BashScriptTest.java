package io.outrun.sandbox.script;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every {@code .sh} resource of the sandbox passes {@code bash -n}, and no bash is left in the
 * Java code: each script lives in its file, run through {@link BashScript}.
 */
class BashScriptTest {

    /** The module's resources as built (main and test: the test's stand-ins are bash too). */
    private static List<Path> scripts() throws IOException {
        List<Path> found = new ArrayList<>();
        for (String root : new String[] {"src/main/resources", "src/test/resources"}) {
            Path dir = Path.of(root);
            if (Files.isDirectory(dir)) {
                try (Stream<Path> files = Files.walk(dir)) {
                    files.filter(f -> f.toString().endsWith(".sh")).forEach(found::add);
                }
            }
        }
        return found;
    }

    @Test
    void everyScriptResourceParses() throws Exception {
        List<Path> scripts = scripts();
        assertThat(scripts).extracting(p -> p.getFileName().toString())
                .contains("bootstrap.sh", "wrapper.sh", "tty.sh", "watchdog.sh");
        for (Path script : scripts) {
            Process p = new ProcessBuilder(BashScript.BASH, "-n", script.toString()).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as("bash -n %s: %s", script, out).isZero();
        }
    }

    @Test
    void eachScriptSaysWhatItAssumesAndWhatItsCallerPasses() throws Exception {
        for (Path script : scripts()) {
            if (!script.startsWith("src/main")) {
                continue;
            }
            String text = Files.readString(script);
            assertThat(text).as(script.toString()).contains("Assumes").contains("The caller passes");
        }
    }

    @Test
    void aScriptIsReadFromItsResourceAndRunInlineWithItsArguments() throws Exception {
        BashScript bootstrap = BashScript.of(io.outrun.sandbox.Sandbox.class, "docker/bootstrap.sh");
        assertThat(bootstrap.resource()).isEqualTo("io/outrun/sandbox/docker/bootstrap.sh");
        assertThat(bootstrap.text()).startsWith("# The container bootstrap");
        assertThat(bootstrap.inline("name", "a", "")).containsExactly("/bin/bash", "-c", bootstrap.text(), "name", "a", "");
    }

    @Test
    void aMissingScriptIsABrokenBuild() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> BashScript.of(BashScriptTest.class, "none.sh"))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("io/outrun/sandbox/script/none.sh");
    }

    /**
     * Bash's own words, never in Java main code again: this module's, and every module's beside
     * it when the whole project is checked out.
     */
    @Test
    void noBashIsLeftInTheJavaCode() throws Exception {
        Pattern bash = Pattern.compile("mapfile|read -N|\\btrap\\b|exec 9<|printf %\\(|read -r -t|kill -KILL");
        List<Path> roots = new ArrayList<>(List.of(Path.of("src/main/java")));
        if (Files.isRegularFile(Path.of("../pom.xml"))) {
            try (Stream<Path> modules = Files.list(Path.of(".."))) {
                modules.map(m -> m.resolve("src/main/java")).filter(Files::isDirectory).forEach(roots::add);
            }
        }
        List<String> found = new ArrayList<>();
        for (Path root : roots) {
            found.addAll(bashIn(root, bash));
        }
        assertThat(found).as("bash in Java code (it belongs in a .sh resource)").isEmpty();
    }

    private static List<String> bashIn(Path root, Pattern bash) throws IOException {
        List<String> found = new ArrayList<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".java"))::iterator) {
                List<String> lines = Files.readAllLines(file);
                for (int i = 0; i < lines.size(); i++) {
                    if (bash.matcher(lines.get(i)).find()) {
                        found.add(file + ":" + (i + 1) + ": " + lines.get(i).strip());
                    }
                }
            }
        }
        return found;
    }
}
