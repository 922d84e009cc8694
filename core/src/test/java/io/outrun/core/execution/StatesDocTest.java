package io.outrun.core.execution;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's "States and moves" table says what {@link ExecutionStatus} says: a row per status,
 * and each row's "may move to" exactly the enum's {@link ExecutionStatus#next()}. (The database's
 * trigger is checked against the enum by {@code ExecutionStoreIT}.)
 */
class StatesDocTest {

    private static final Pattern ROW = Pattern.compile("^\\| `([a-z_]+)` \\|.*\\| ([^|]+) \\|$");
    private static final Pattern STATUS = Pattern.compile("`([a-z_]+)`");

    @Test
    void theReadmesTableIsTheEnumsTable() throws IOException {
        Map<ExecutionStatus, Set<ExecutionStatus>> documented = new LinkedHashMap<>();
        List<String> lines = Files.readAllLines(readme());
        int start = lines.indexOf(lines.stream().filter(l -> l.startsWith("**States and moves.**")).findFirst()
                .orElseThrow(() -> new AssertionError("README.md has no \"States and moves\" paragraph")));
        for (String line : lines.subList(start, lines.size())) {
            if (line.startsWith("#")) {
                break;
            }
            Matcher row = ROW.matcher(line);
            if (!row.matches()) {
                continue;
            }
            ExecutionStatus from = ExecutionStatus.fromWire(row.group(1));
            Set<ExecutionStatus> to = EnumSet.noneOf(ExecutionStatus.class);
            Matcher next = STATUS.matcher(row.group(2));
            while (next.find()) {
                to.add(ExecutionStatus.fromWire(next.group(1)));
            }
            assertThat(documented.put(from, to)).as("one row for " + from.wire()).isNull();
        }
        assertThat(documented.keySet()).containsExactlyInAnyOrder(ExecutionStatus.values());
        documented.forEach((from, to) -> assertThat(to).as("README: %s may move to", from.wire()).isEqualTo(from.next()));
    }

    /** The repository's README, from the module's directory (Maven runs tests there) or the root. */
    private static Path readme() {
        for (Path p : List.of(Path.of("../README.md"), Path.of("README.md"))) {
            if (Files.isRegularFile(p) && p.toAbsolutePath().normalize().getParent().resolve("api").toFile().isDirectory()) {
                return p;
            }
        }
        throw new AssertionError("README.md not found beside the api module");
    }
}
