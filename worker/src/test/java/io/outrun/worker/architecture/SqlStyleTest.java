package io.outrun.worker.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * One SQL style (CONTRIBUTING.md, "SQL"), checked on every build: every statement in main code is
 * a {@code NamedSql} whose text is a literal (no {@code +}, {@code formatted} or {@code replace}
 * at run time; the two exceptions fixed at class load are {@code ExecutionsTable}'s, documented there), nothing prepares a statement but {@code NamedSql}, and only the few classes
 * that run a fixed statement with no parameter use a plain {@code Statement}.
 */
class SqlStyleTest {

    /** The classes allowed a plain JDBC Statement, each saying why where it uses one. */
    private static final Set<String> PLAIN_STATEMENT = Set.of("Listener.java", "HealthCheck.java",
            "JobRunrStorage.java", "Database.java", "DevCommand.java");

    @Test
    void everyStatementIsANamedSqlLiteral() throws IOException {
        List<String> wrong = new ArrayList<>();
        for (Path file : mainSources()) {
            String name = file.getFileName().toString();
            String code = Files.readString(file);
            if (code.contains("prepareStatement(") && !name.equals("NamedSql.java")) {
                wrong.add(file + ": prepareStatement outside NamedSql");
            }
            if (code.contains("createStatement(") && !PLAIN_STATEMENT.contains(name)) {
                wrong.add(file + ": a plain Statement (see CONTRIBUTING.md, \"SQL\")");
            }
            int at = 0;
            while ((at = code.indexOf("NamedSql.of(", at)) >= 0) {
                at += "NamedSql.of(".length();
                if (name.equals("NamedSql.java")) {
                    continue;
                }
                // The listing's filter mixes: built once at class load from fixed text (documented there).
                boolean listing = name.equals("ExecutionsTable.java")
                        && code.lastIndexOf("PAGE = ", at) > code.lastIndexOf(';', at);
                // The reads of a whole row: one column list (ROW) fixed at class load, each with its WHERE.
                int arg = at + (code.substring(at).length() - code.substring(at).stripLeading().length());
                boolean rowRead = name.equals("ExecutionsTable.java") && code.startsWith("ROW + ", arg);
                String after = literalEnd(code, rowRead ? arg + "ROW + ".length() : at);
                if (after == null || (!after.startsWith(")") && !listing)) {
                    int line = code.substring(0, at).split("\n", -1).length;
                    wrong.add(file + ":" + line + ": NamedSql.of takes a text block or literal, whole");
                }
            }
        }
        assertThat(wrong).isEmpty();
    }

    /** What follows the string literal starting at {@code at} (spaces skipped); null: no literal there. */
    private static String literalEnd(String code, int at) {
        String rest = code.substring(at).stripLeading();
        int end;
        if (rest.startsWith("\"\"\"")) {
            end = rest.indexOf("\"\"\"", 3) + 3;
        } else if (rest.startsWith("\"")) {
            end = rest.indexOf('"', 1) + 1;
        } else {
            return null;
        }
        return rest.substring(end).stripLeading();
    }

    private static List<Path> mainSources() throws IOException {
        // Tests run in the worker module's directory; its parent holds every module.
        Path root = Path.of("").toAbsolutePath().getParent();
        List<Path> files = new ArrayList<>();
        for (String module : List.of("core", "api", "cli", "worker")) {
            Path sources = root.resolve(module).resolve("src/main/java");
            assertThat(sources).isDirectory();
            try (Stream<Path> walk = Files.walk(sources)) {
                walk.filter(f -> f.toString().endsWith(".java")).forEach(files::add);
            }
        }
        assertThat(files).hasSizeGreaterThan(100);
        return files;
    }
}
