package io.outrun.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The defaults a newcomer reads are the ones the code uses: every {@code `--option …` [default]}
 * of the README's worker table and API options matches picocli's default (itself the config
 * record's constant); environment variables reach options through picocli's own defaults.
 */
class OptionDefaultsTest {

    private static final Pattern DOCUMENTED = Pattern.compile("`(--[a-z-]+)[^`]*` \\[([^\\]]+)\\]");

    @Test
    void theReadmeStatesTheWorkersDefaults() throws IOException {
        assertDefaults("worker", section("Worker options (defaults in brackets):", "API options"));
    }

    @Test
    void theReadmeStatesTheApisDefaults() throws IOException {
        assertDefaults("api", section("API options (`outrun api` and `outrun dev`)", "Why these defaults"));
    }

    @Test
    void anUnsetEnvironmentVariableLeavesTheOptionUnset() {
        // Neither variable is set where the tests run: picocli must give null, not the expression.
        assertThat(System.getenv("OUTRUN_DASHBOARD_USER")).isNull();
        WorkerCommand worker = new WorkerCommand();
        new CommandLine(worker).parseArgs();
        assertThat(worker.dashboardUser).isNull();
        assertThat(worker.slots).isEqualTo(io.outrun.worker.node.WorkerConfig.DEFAULT_SLOTS);
    }

    private static void assertDefaults(String command, String text) {
        CommandLine root = Outrun.commandLine();
        CommandLine sub = root.getSubcommands().get(command);
        List<String> checked = new ArrayList<>();
        Matcher m = DOCUMENTED.matcher(text);
        while (m.find()) {
            String name = m.group(1);
            String documented = m.group(2);
            OptionSpec option = sub.getCommandSpec().findOption(name);
            assertThat(option).as("README documents %s for `outrun %s`, which has no such option", name, command).isNotNull();
            String actual = option.defaultValue();
            if (actual == null || actual.startsWith("${env:")) {
                continue; // documented in words (host-random, none, the env variable)
            }
            assertThat(documented.equals(actual) || documented.startsWith(actual + " "))
                    .as("README says %s defaults to [%s]; the code says %s", name, documented, actual).isTrue();
            checked.add(name);
        }
        assertThat(checked).as("options whose documented default was checked").hasSizeGreaterThan(3);
    }

    private static String section(String from, String to) throws IOException {
        Path readme = Path.of("..", "README.md");
        String text = Files.readString(readme);
        int start = text.indexOf(from);
        assertThat(start).as("README section " + from).isNotNegative();
        int end = text.indexOf(to, start + from.length());
        return text.substring(start, end < 0 ? text.length() : end);
    }
}
