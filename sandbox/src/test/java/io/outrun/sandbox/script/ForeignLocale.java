package io.outrun.sandbox.script;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A locale unlike C for the script tests: ar_EG.UTF-8 (Arabic digits in Java's formats; a
 * multibyte charset for bash, where a character is not a byte), made with localedef into a
 * directory of this build when the host does not have it, else C.UTF-8. The scripts count bytes
 * whatever locale they are started under; these tests start them under this one.
 */
public final class ForeignLocale {

    private static Map<String, String> env;

    private ForeignLocale() {
    }

    /** The variables that select the locale: LC_ALL, and LOCPATH when it was made here. */
    public static synchronized Map<String, String> env() {
        if (env == null) {
            env = make();
        }
        return env;
    }

    /** The locale's name, as LC_ALL has it. */
    public static String name() {
        return env().get("LC_ALL");
    }

    private static Map<String, String> make() {
        Map<String, String> chosen = new LinkedHashMap<>();
        try {
            Path dir = Path.of("target", "locales").toAbsolutePath();
            Path made = dir.resolve("ar_EG.UTF-8");
            if (!Files.isDirectory(made)) {
                Files.createDirectories(dir);
                Process p = new ProcessBuilder("localedef", "-i", "ar_EG", "-f", "UTF-8", made.toString())
                        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
                if (!p.waitFor(60, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                }
            }
            if (Files.isDirectory(made)) {
                chosen.put("LOCPATH", dir.toString());
                chosen.put("LC_ALL", "ar_EG.UTF-8");
                return chosen;
            }
        } catch (Exception e) {
            // No localedef here: C.UTF-8 is multibyte too.
        }
        chosen.put("LC_ALL", "C.UTF-8");
        return chosen;
    }
}
